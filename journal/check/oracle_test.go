package check

// The whole-memory verify and dump this package had before they streamed,
// kept only as the oracle the streaming ones are compared with
// (TestStreamingMatchesWholeMemory). Its independence is in how it loads
// and resolves: every shard whole in memory, references looked up in
// maps. The rules themselves it shares with the streaming verifier:
// verify_run.go (checkRun for one run alone; the rules of a reference,
// resolved or not), verify.go (directoryRules), verify_index.go
// (generationRules, indexEntryRules) and verify_outputs.go (messageRules,
// senderRules, seenRule, the message-ID rule). The planted-damage tests
// (verify_test.go) pin those rules.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/fusee-dev/fusee/journal/model"
)

func oldWriteDumpContext(ctx context.Context, w io.Writer, shards []*model.Shard, opts DumpOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := newOldDumper(shards, opts)
	lines, err := d.lines(ctx)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i, line := range lines {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

type oldDumper struct {
	u      *oldUniverse
	shards []*model.Shard
	phys   bool
}

func newOldDumper(shards []*model.Shard, opts DumpOptions) *oldDumper {
	return &oldDumper{u: newOldUniverse(shards), shards: shards, phys: opts.Physical}
}

func (d *oldDumper) runRef(ref model.RunRef) string {
	if ref.IsZero() {
		return ""
	}
	if _, r, res := d.u.run(ref.Shard, ref.Run); res == resolved {
		return name(r)
	}
	return danglingRef
}

func (d *oldDumper) posRef(shard int, no model.RunNo, pos uint32) string {
	if no == 0 {
		return ""
	}
	if s := d.runRef(model.RunRef{Shard: shard, Run: no}); s != danglingRef {
		return at(s, pos)
	}
	return danglingRef
}

func (d *oldDumper) keyRef(k model.CtxKey) string {
	if k.WorkflowID == "" {
		return ""
	}
	if r := d.u.keyRun(k); r != nil {
		return at(name(r), k.Pos)
	}
	return danglingRef
}

func (d *oldDumper) sortedRuns() []oldLocated {
	var all []oldLocated
	for _, s := range d.shards {
		if s == nil {
			continue
		}
		for _, r := range s.Runs {
			all = append(all, oldLocated{s, r})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.r.WorkflowID != b.r.WorkflowID {
			return a.r.WorkflowID < b.r.WorkflowID
		}
		if a.r.Gen != b.r.Gen {
			return a.r.Gen < b.r.Gen
		}
		// Only a damaged state gets here (two runs share an identity):
		// order physically so the dump is still deterministic.
		if a.s.Index != b.s.Index {
			return a.s.Index < b.s.Index
		}
		return a.r.No < b.r.No
	})
	return all
}

func (d *oldDumper) lines(ctx context.Context) ([]any, error) {
	var out []any
	if d.phys {
		for _, s := range d.shards {
			if s != nil {
				out = append(out, shardLine{T: "shard", Phys: &shardPhys{Shard: s.Index, Count: s.Count, LSN: s.LSN,
					NextRun: uint64(s.NextRun), NextSeq: s.NextSeq, StoreGen: s.StoreGen}})
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	runs := d.sortedRuns()
	for i, l := range runs {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out = append(out, d.runLine(l))
		archived := l.r.State == model.StateTombstone
		h := history(l.s, l.r)
		for i := range h {
			out = append(out, d.recLine(l, uint32(i), &h[i], archived))
		}
	}
	out = append(out, d.timerLines()...)
	out = append(out, d.msgLines()...)
	out = append(out, d.seenLines()...)
	return out, ctx.Err()
}

func (d *oldDumper) runLine(l oldLocated) runLine {
	r := l.r
	line := runLine{T: "run", Run: name(r), WorkflowID: r.WorkflowID, Gen: r.Gen, Type: r.Type, State: r.State.String(),
		Started: r.Started, Finished: r.Finished}
	if r.Status != model.StatusNone {
		line.Status = r.Status.String()
	}
	if no, ok := l.s.ByID[r.WorkflowID]; ok && no == r.No {
		line.Latest = true
	}
	if d.phys {
		line.Phys = &runPhys{Shard: l.s.Index, No: uint64(r.No), Renumbered: r.Renumbered}
	}
	return line
}

func (d *oldDumper) recLine(l oldLocated, index uint32, rec *model.Record, archived bool) recLine {
	r := l.r
	line := recLine{T: "rec", Run: name(r), Pos: index, Kind: rec.Kind.String(), Archived: archived,
		Time: rec.Time, Deadline: rec.Deadline, Ref: rec.Ref, WorkflowID: rec.WorkflowID, Type: rec.Type,
		Name: rec.Name, MsgID: rec.MsgID, Attempt: rec.Attempt, Gen: rec.Gen, ParentID: rec.ParentID,
		Status: strIf(rec.Status, rec.Status == model.StatusNone),
		Origin: strIf(rec.Origin, rec.Kind != model.KindStart && rec.Origin == model.OriginFresh),
		Parent: d.posRef(rec.Parent.Shard, rec.Parent.Run, rec.Parent.Pos),
		Pred:   d.runRef(rec.Pred),
		Next:   d.runRef(rec.Next),
		By:     d.runRef(rec.By),
		Key:    d.keyRef(rec.Key),
		Token:  d.posRef(rec.Token.Shard, rec.Token.Run, rec.Token.Pos),
	}
	if rec.Pos != index {
		p := rec.Pos
		line.RecPos = &p
	}
	line.Payload, line.PayloadB64 = payload(rec.Payload)
	if d.phys {
		p := &refsPhys{Shard: l.s.Index, No: uint64(r.No)}
		if !rec.Parent.IsZero() {
			p.Parent = rec.Parent.String()
		}
		if !rec.Pred.IsZero() {
			p.Pred = rec.Pred.String()
		}
		if !rec.Next.IsZero() {
			p.Next = rec.Next.String()
		}
		if !rec.By.IsZero() {
			p.By = rec.By.String()
		}
		if rec.Key.WorkflowID != "" {
			p.Key = rec.Key.String()
		}
		if rec.Token.Run != 0 {
			p.Token = rec.Token.String()
		}
		line.Phys = p
	}
	return line
}

func (d *oldDumper) timerLines() []any {
	var ls []timerLine
	for _, s := range d.shards {
		if s == nil {
			continue
		}
		for k := range s.Timers {
			run := danglingRef
			if r, ok := s.Runs[k.Run]; ok {
				run = name(r)
			}
			l := timerLine{T: "timer", Run: run, Pos: k.Pos, At: k.At}
			if d.phys {
				l.Phys = &refsPhys{Shard: s.Index, No: uint64(k.Run)}
			}
			ls = append(ls, l)
		}
	}
	sort.Slice(ls, func(i, j int) bool {
		a, b := ls[i], ls[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.Pos != b.Pos {
			return a.Pos < b.Pos
		}
		if a.At != b.At {
			return a.At < b.At
		}
		return a.Phys != nil && b.Phys != nil && a.Phys.Shard < b.Phys.Shard
	})
	out := make([]any, len(ls))
	for i := range ls {
		out[i] = ls[i]
	}
	return out
}

func (d *oldDumper) msgLines() []any {
	type keyed struct {
		id    string
		shard int
		line  msgLine
	}
	var ls []keyed
	for _, s := range d.shards {
		if s == nil {
			continue
		}
		for key, m := range s.Outbox {
			l := msgLine{T: "msg", ID: m.ID, Kind: m.Kind.String(), From: d.runRef(m.From), Target: m.Target,
				Parent: d.posRef(m.Parent.Shard, m.Parent.Run, m.Parent.Pos), ParentID: m.ParentID, Type: m.Type, Name: m.Name,
				Status: strIf(m.Status, m.Status == model.StatusNone), Deadline: m.Deadline, Sent: m.Sent}
			if l.From == "" {
				l.From = danglingRef
			}
			l.Payload, l.PayloadB64 = payload(m.Payload)
			if d.phys {
				l.Phys = &refsPhys{Shard: s.Index, Seq: m.Seq, From: m.From.String()}
				if !m.Parent.IsZero() {
					l.Phys.Parent = m.Parent.String()
				}
			}
			ls = append(ls, keyed{key, s.Index, l})
		}
	}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].id != ls[j].id {
			return ls[i].id < ls[j].id
		}
		return ls[i].shard < ls[j].shard
	})
	out := make([]any, len(ls))
	for i := range ls {
		out[i] = ls[i].line
	}
	return out
}

func (d *oldDumper) seenLines() []any {
	type entry struct{ id, wf string }
	where := map[entry][]int{}
	for _, s := range d.shards {
		if s == nil {
			continue
		}
		for id, wf := range s.Seen {
			e := entry{id, wf}
			where[e] = append(where[e], s.Index)
		}
	}
	es := make([]entry, 0, len(where))
	for e := range where {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].id != es[j].id {
			return es[i].id < es[j].id
		}
		return es[i].wf < es[j].wf
	})
	out := make([]any, len(es))
	for i, e := range es {
		l := seenLine{T: "seen", ID: e.id, WorkflowID: e.wf}
		if d.phys {
			sh := where[e]
			sort.Ints(sh)
			l.Phys = &seenPhys{Shards: sh}
		}
		out[i] = l
	}
	return out
}

func oldVerifyContext(ctx context.Context, st *State) ([]Finding, error) {
	v := &oldVerifier{ctx: ctx, st: st}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.u = newOldUniverse(st.Shards)
	directoryRules(st.view(Options{}), v.addf)
	for i, s := range st.Shards {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s == nil {
			v.addf(KindShardCount, -1, 0, "slot %d holds no shard", i)
			continue
		}
		if err := v.shard(s); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.outboxIDsAcrossShards()
	sortFindings(v.out)
	return v.out, nil
}

type oldVerifier struct {
	ctx context.Context
	st  *State
	u   *oldUniverse
	out []Finding
}

func (v *oldVerifier) addf(k Kind, shard int, run model.RunNo, format string, args ...any) {
	info, ok := kinds[k]
	if !ok {
		panic("check: finding kind without a kinds entry: " + string(k))
	}
	v.out = append(v.out, Finding{Kind: k, Severity: info.sev, Shard: shard, Run: run,
		Detail: fmt.Sprintf(format, args...), Hint: info.hint})
}

func (v *oldVerifier) shard(s *model.Shard) error {
	for i, r := range s.SortedRuns() {
		if i%checkEvery == checkEvery-1 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		v.runEntry(s, r)
	}
	// Map keys in order, so that a run whose entry says another number
	// is still checked under the key it is stored at.
	for _, no := range sortedKeys(s.Runs) {
		r := s.Runs[no]
		if r.No != no {
			v.addf(KindRunKeyMismatch, s.Index, no, "stored as run %d, the entry says run %d", no, r.No)
		}
	}
	for _, no := range sortedKeys(s.Archive) {
		if r, ok := s.Runs[no]; !ok {
			v.addf(KindArchiveOrphan, s.Index, no, "archived history of a run the shard does not have")
		} else if r.State != model.StateTombstone {
			v.addf(KindArchiveOrphan, s.Index, no, "archived history of a run that is %s", r.State)
		}
	}
	v.index(s)
	v.timers(s)
	v.outbox(s)
	v.seen(s)
	return nil
}

func (v *oldVerifier) runEntry(s *model.Shard, r *model.Run) {
	archive, archived := s.Archive[r.No]
	if j := checkRun(v.about(s, r), v.place(s), r, archive, archived); j != nil {
		v.references(s, r, j)
	}
}

func (v *oldVerifier) about(s *model.Shard, r *model.Run) addRunFinding {
	return func(k Kind, format string, args ...any) { v.addf(k, s.Index, r.No, format, args...) }
}

func (v *oldVerifier) place(s *model.Shard) runPlace {
	return runPlace{shard: s.Index, shards: v.st.ShardCount, nextRun: s.NextRun, storeGen: s.StoreGen}
}

func (v *oldVerifier) references(s *model.Shard, r *model.Run, j []model.Record) {
	add := v.about(s, r)
	for i := range j {
		rec := &j[i]
		switch rec.Kind {
		case model.KindStart:
			if i == 0 {
				v.startRefs(s, r, rec)
			}
		case model.KindDone:
			if !nextToFollow(add, v.place(s), r, rec) {
				continue
			}
			if n := v.resolve(s, r, rec, "next run", rec.Next); n != nil {
				nextLands(add, s.Index, r, rec, oldTarget(s, n, 0))
			}
		case model.KindSignal, model.KindCancel:
			if !rec.By.IsZero() {
				v.resolve(s, r, rec, "sender", rec.By)
			}
		case model.KindUpdate:
			if rec.Parent.IsZero() {
				continue
			}
			if c := v.oldLocated(s, r, rec, "caller", rec.Parent.RunRef(), rec.ParentID); c != nil {
				callerIs(add, rec, c)
			}
		}
	}
}

func (v *oldVerifier) startRefs(s *model.Shard, r *model.Run, st *model.Record) {
	add := v.about(s, r)
	if !st.Parent.IsZero() {
		if p, ps := v.locatedShard(s, r, st, "parent", st.Parent.RunRef(), st.ParentID); p != nil {
			parentLands(add, r, st, oldTarget(ps, p, int(st.Parent.Pos)))
		}
	}
	if !st.Pred.IsZero() && predToFollow(add, v.place(s), r, st) {
		if p := v.resolve(s, r, st, "predecessor", st.Pred); p != nil {
			predecessorIs(add, r, st, p)
		}
	}
}

// oldTarget is run r of shard s with record pos of its history, as the
// streaming verifier's lookup finds it in its join.
func oldTarget(s *model.Shard, r *model.Run, pos int) target {
	h := history(s, r)
	t := target{r: r, n: len(h), hist: h != nil}
	if pos < len(h) {
		t.rec = &h[pos]
	}
	return t
}

func (v *oldVerifier) resolve(s *model.Shard, r *model.Run, rec *model.Record, what string, ref model.RunRef) *model.Run {
	t, _ := v.resolveShard(s, r, rec, what, ref)
	return t
}

func (v *oldVerifier) resolveShard(s *model.Shard, r *model.Run, rec *model.Record, what string, ref model.RunRef) (*model.Run, *model.Shard) {
	ts, t, res := v.u.run(ref.Shard, ref.Run)
	var next model.RunNo
	if res == unissued {
		next = ts.NextRun
	}
	resolutionRule(v.about(s, r), rec, what, ref, res, v.u.count, next)
	return t, ts
}

func (v *oldVerifier) oldLocated(s *model.Shard, r *model.Run, rec *model.Record, what string, ref model.RunRef, id string) *model.Run {
	t, _ := v.locatedShard(s, r, rec, what, ref, id)
	return t
}

func (v *oldVerifier) locatedShard(s *model.Shard, r *model.Run, rec *model.Record, what string, ref model.RunRef, id string) (*model.Run, *model.Shard) {
	if _, ok := v.u.byIndex[ref.Shard]; ok && !onIDsShard(v.about(s, r), v.st.ShardCount, rec, what, ref, id) {
		return nil, nil
	}
	return v.resolveShard(s, r, rec, what, ref)
}

func (v *oldVerifier) index(s *model.Shard) {
	byID := map[string][]joined{}
	for _, r := range s.SortedRuns() {
		byID[r.WorkflowID] = append(byID[r.WorkflowID], oldJoined(r))
	}
	for _, id := range sortedIDs(byID) {
		latest := generationRules(v.addf, s.Index, id, byID[id]) // in run-number order
		no, ok := s.ByID[id]
		var named *joined
		if r := s.Runs[no]; ok && r != nil && r.WorkflowID == id {
			j := oldJoined(r)
			named = &j
		}
		indexEntryRules(v.addf, s.Index, id, latest, no, ok, named)
	}
	for _, id := range sortedIDs(s.ByID) {
		no := s.ByID[id]
		r, ok := s.Runs[no]
		switch {
		case !ok:
			v.addf(KindIndexMissingRun, s.Index, no, "the index entry for %q names run %d, which the shard does not have", id, no)
		case r.WorkflowID != id:
			v.addf(KindIndexWrongID, s.Index, no, "the index entry for %q names a run of %q", id, r.WorkflowID)
		}
	}
}

// oldJoined is what the streaming verifier's index join holds of r.
func oldJoined(r *model.Run) joined {
	return joined{no: r.No, key: r.No, gen: r.Gen, state: r.State, renumbered: r.Renumbered}
}

func (v *oldVerifier) timers(s *model.Shard) {
	cp := &model.Shard{Index: s.Index, Count: s.Count, Runs: s.Runs}
	cp.RebuildTimers()
	var missing, stale []model.TimerKey
	for k := range cp.Timers {
		if _, ok := s.Timers[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range s.Timers {
		if _, ok := cp.Timers[k]; !ok {
			stale = append(stale, k)
		}
	}
	sortTimers(missing)
	sortTimers(stale)
	for _, k := range missing {
		v.addf(KindTimerMissing, s.Index, k.Run, "position %d implies a timer at %d that the index lacks", k.Pos, k.At)
	}
	for _, k := range stale {
		v.addf(KindTimerStale, s.Index, k.Run, "the index holds a timer at %d for position %d that no pending record implies", k.At, k.Pos)
	}
}

func (v *oldVerifier) outbox(s *model.Shard) {
	// Regenerate what each sender's history produces, keyed by ID.
	produced := map[string]model.Message{}
	for _, r := range s.SortedRuns() {
		h := history(s, r)
		for _, m := range produces(s.Index, r, h) {
			if _, dup := produced[m.ID]; dup {
				v.addf(KindMsgIDDuplicate, s.Index, r.No, "message ID %q is produced by two records", m.ID)
				continue
			}
			produced[m.ID] = m
		}
		recordMsgIDs(v.addf, v.place(s), r, h)
	}
	seqs := map[uint64]string{}
	for _, id := range sortedIDs(s.Outbox) {
		m := s.Outbox[id]
		fromHere := messageRules(v.addf, s.Index, s.NextSeq, id, m)
		if m.Seq != 0 && m.Seq < s.NextSeq {
			if prev := seqs[m.Seq]; prev != "" {
				v.addf(KindOutboxSeq, s.Index, m.From.Run, "message %q: sequence number %d is also message %q's", id, m.Seq, prev)
			} else {
				seqs[m.Seq] = id
			}
		}
		if !fromHere {
			continue
		}
		want, produced := produced[id]
		diff := ""
		if produced {
			diff = messageDiff(m, &want)
		}
		senderRules(v.addf, v.place(s), id, m.From, s.Runs[m.From.Run], !produced, diff)
	}
}

func (v *oldVerifier) seen(s *model.Shard) {
	for _, id := range sortedIDs(s.Seen) {
		seenRule(v.addf, v.place(s), id, s.Seen[id])
	}
}

func (v *oldVerifier) outboxIDsAcrossShards() {
	where := map[string]int{}
	for _, s := range v.st.Shards {
		if s == nil {
			continue
		}
		for _, id := range sortedIDs(s.Outbox) {
			if prev, ok := where[id]; ok {
				v.addf(KindMsgIDDuplicate, s.Index, s.Outbox[id].From.Run, "message %q is also in shard %d's outbox", id, prev)
				continue
			}
			where[id] = s.Index
		}
	}
}

type oldUniverse struct {
	count   int
	byIndex map[int]*model.Shard
	// byKey finds runs by (workflow ID, run number), for Ctx::key values,
	// which name no shard.
	byKey map[idNo][]oldLocated
}

type idNo struct {
	id string
	no model.RunNo
}

type oldLocated struct {
	s *model.Shard
	r *model.Run
}

func newOldUniverse(shards []*model.Shard) *oldUniverse {
	u := &oldUniverse{count: len(shards), byIndex: map[int]*model.Shard{}, byKey: map[idNo][]oldLocated{}}
	for _, s := range shards {
		if s == nil {
			continue
		}
		if _, dup := u.byIndex[s.Index]; !dup {
			u.byIndex[s.Index] = s
		}
		for _, r := range s.Runs {
			k := idNo{r.WorkflowID, r.No}
			u.byKey[k] = append(u.byKey[k], oldLocated{s, r})
		}
	}
	return u
}

func (u *oldUniverse) run(shard int, no model.RunNo) (*model.Shard, *model.Run, resolution) {
	if no == model.NoSuchRun {
		return nil, nil, noSuchRun
	}
	s, ok := u.byIndex[shard]
	if !ok {
		return nil, nil, badShard
	}
	if r, ok := s.Runs[no]; ok {
		return s, r, resolved
	}
	if no == 0 || no >= s.NextRun {
		return s, nil, unissued
	}
	return s, nil, dangling
}

func (u *oldUniverse) keyRun(k model.CtxKey) *model.Run {
	if l := u.byKey[idNo{k.WorkflowID, k.Run}]; len(l) == 1 {
		return l[0].r
	}
	return nil
}

func sortTimers(ks []model.TimerKey) {
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.Pos != b.Pos {
			return a.Pos < b.Pos
		}
		return a.At < b.At
	})
}

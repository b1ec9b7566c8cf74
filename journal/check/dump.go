package check

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/fusee-dev/fusee/journal"
)

// DumpOptions configure WriteDump.
type DumpOptions struct {
	// Physical adds a "phys" member to each line (shard, run numbers, raw
	// references, outbox sequence, the renumbered flag) and one "shard"
	// line per shard. A comparison of logical content must leave it off.
	Physical bool
}

// WriteLogicalDump writes the logical dump of shards: WriteDump without
// physical fields. It is the oracle the simulator and reshard compare
// directories by.
func WriteLogicalDump(w io.Writer, shards []*journal.Shard) error {
	return WriteDump(w, shards, DumpOptions{})
}

// WriteDump writes the state of shards as sorted JSON lines, one object
// per line, each with a "t" member saying what it is:
//
//	{"t":"shard","phys":{...}}                      only with Physical: shard, count, lsn, next_run, next_seq, store_gen
//	{"t":"run","run":"wf#2","workflow_id":"wf","gen":2,"type":..,"state":..,"status":..,"started":..,"finished":..,"latest":true}
//	{"t":"rec","run":"wf#2","pos":5,"kind":"child","archived":true,...record fields...}
//	{"t":"timer","run":"wf#2","pos":3,"at":1000}
//	{"t":"msg","id":"wf/2/c5","kind":"start-child","from":"wf#2","target":..,"parent":"wf#2@5","parent_id":"wf","sent":..,...}
//	{"t":"seen","id":"wf/2/c5","workflow_id":"wf.2.kid"}
//
// Order: shard lines by shard; then runs by workflow ID and generation,
// each followed by its records in position order (a tombstone's records
// are its archived history, marked "archived"); then timers by run and
// position; then messages by ID; then dedup entries by message ID and
// receiving workflow ID (once each, whichever shards hold them). Zero
// fields are left out.
//
// A run is named "<workflow ID>#<gen>". A reference is rendered as the run
// it resolves to, with "@<pos>" where it names a journal position: parent
// and caller references, Ctx::key values (key) and completion tokens
// (token) are positioned; pred, next, by and from are not. A reference
// that matches no run is "dangling". A completion token's store
// generation is physical (a reshard changes it, as it changes run
// numbers): the logical form leaves it out, the "phys" member has the
// token's text form ("tk" + 24 hex digits), generation included.
// Payloads are JSON strings when they
// are UTF-8 ("payload"), base64 otherwise ("payload_b64"). Record fields
// keep the names of journal.Record in snake case; statuses, origins and
// kinds are their String forms.
//
// The logical dump of a state does not depend on its shard count or run
// numbers as long as each (workflow ID, generation) names one run, which
// Verify checks.
func WriteDump(w io.Writer, shards []*journal.Shard, opts DumpOptions) error {
	return WriteDumpContext(context.Background(), w, shards, opts)
}

// WriteDumpContext is WriteDump that gives up when ctx is done: it looks
// at ctx before each shard's runs and every checkEvery runs or lines, and
// then returns ctx.Err(). What was written by then is a prefix of the
// dump (whatever the buffer held is flushed only on success).
func WriteDumpContext(ctx context.Context, w io.Writer, shards []*journal.Shard, opts DumpOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := newDumper(shards, opts)
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

type dumper struct {
	u      *universe
	shards []*journal.Shard
	phys   bool
}

func newDumper(shards []*journal.Shard, opts DumpOptions) *dumper {
	return &dumper{u: newUniverse(shards), shards: shards, phys: opts.Physical}
}

// name is a run's invariant identity.
func name(r *journal.Run) string { return r.WorkflowID + "#" + strconv.FormatUint(uint64(r.Gen), 10) }

func at(n string, pos uint32) string { return n + "@" + strconv.FormatUint(uint64(pos), 10) }

const danglingRef = "dangling"

func (d *dumper) runRef(ref journal.RunRef) string {
	if ref.IsZero() {
		return ""
	}
	if _, r, res := d.u.run(ref.Shard, ref.Run); res == resolved {
		return name(r)
	}
	return danglingRef
}

func (d *dumper) posRef(shard int, no journal.RunNo, pos uint32) string {
	if no == 0 {
		return ""
	}
	if s := d.runRef(journal.RunRef{Shard: shard, Run: no}); s != danglingRef {
		return at(s, pos)
	}
	return danglingRef
}

func (d *dumper) keyRef(k journal.CtxKey) string {
	if k.WorkflowID == "" {
		return ""
	}
	if r := d.u.keyRun(k); r != nil {
		return at(name(r), k.Pos)
	}
	return danglingRef
}

// located pairs a run with its shard for sorting.
func (d *dumper) sortedRuns() []located {
	var all []located
	for _, s := range d.shards {
		if s == nil {
			continue
		}
		for _, r := range s.Runs {
			all = append(all, located{s, r})
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

func (d *dumper) lines(ctx context.Context) ([]any, error) {
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
		archived := l.r.State == journal.StateTombstone
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

type shardLine struct {
	T    string     `json:"t"`
	Phys *shardPhys `json:"phys"`
}

type shardPhys struct {
	Shard    int    `json:"shard"`
	Count    int    `json:"count"`
	LSN      uint64 `json:"lsn"`
	NextRun  uint64 `json:"next_run"`
	NextSeq  uint64 `json:"next_seq"`
	StoreGen uint64 `json:"store_gen"`
}

type runLine struct {
	T          string   `json:"t"`
	Run        string   `json:"run"`
	WorkflowID string   `json:"workflow_id"`
	Gen        uint32   `json:"gen"`
	Type       string   `json:"type,omitempty"`
	State      string   `json:"state"`
	Status     string   `json:"status,omitempty"`
	Started    int64    `json:"started,omitempty"`
	Finished   int64    `json:"finished,omitempty"`
	Latest     bool     `json:"latest,omitempty"`
	Phys       *runPhys `json:"phys,omitempty"`
}

type runPhys struct {
	Shard      int    `json:"shard"`
	No         uint64 `json:"no"`
	Renumbered bool   `json:"renumbered,omitempty"`
}

func (d *dumper) runLine(l located) runLine {
	r := l.r
	line := runLine{T: "run", Run: name(r), WorkflowID: r.WorkflowID, Gen: r.Gen, Type: r.Type, State: r.State.String(),
		Started: r.Started, Finished: r.Finished}
	if r.Status != journal.StatusNone {
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

type recLine struct {
	T          string  `json:"t"`
	Run        string  `json:"run"`
	Pos        uint32  `json:"pos"`
	Kind       string  `json:"kind"`
	Archived   bool    `json:"archived,omitempty"`
	Time       int64   `json:"time,omitempty"`
	Deadline   int64   `json:"deadline,omitempty"`
	Ref        uint32  `json:"ref,omitempty"`
	WorkflowID string  `json:"workflow_id,omitempty"`
	Type       string  `json:"type,omitempty"`
	Name       string  `json:"name,omitempty"`
	MsgID      string  `json:"msg_id,omitempty"`
	Status     string  `json:"status,omitempty"`
	Attempt    uint32  `json:"attempt,omitempty"`
	Origin     string  `json:"origin,omitempty"`
	Gen        uint32  `json:"gen,omitempty"`
	Parent     string  `json:"parent,omitempty"`
	ParentID   string  `json:"parent_id,omitempty"`
	Pred       string  `json:"pred,omitempty"`
	Next       string  `json:"next,omitempty"`
	By         string  `json:"by,omitempty"`
	Key        string  `json:"key,omitempty"`
	Token      string  `json:"token,omitempty"`
	Payload    *string `json:"payload,omitempty"`
	PayloadB64 []byte  `json:"payload_b64,omitempty"`
	// RecPos is the record's own Pos field when it differs from its
	// index (a damaged journal); normally absent.
	RecPos *uint32   `json:"rec_pos,omitempty"`
	Phys   *refsPhys `json:"phys,omitempty"`
}

// refsPhys holds a record's or message's references as stored.
type refsPhys struct {
	Shard  int    `json:"shard"`
	No     uint64 `json:"no,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	From   string `json:"from,omitempty"`
	Parent string `json:"parent,omitempty"`
	Pred   string `json:"pred,omitempty"`
	Next   string `json:"next,omitempty"`
	By     string `json:"by,omitempty"`
	Key    string `json:"key,omitempty"`
	Token  string `json:"token,omitempty"`
}

func payload(p []byte) (*string, []byte) {
	if len(p) == 0 {
		return nil, nil
	}
	if utf8.Valid(p) {
		s := string(p)
		return &s, nil
	}
	return nil, p
}

func strIf[T fmt.Stringer](v T, zero bool) string {
	if zero {
		return ""
	}
	return v.String()
}

func (d *dumper) recLine(l located, index uint32, rec *journal.Record, archived bool) recLine {
	r := l.r
	line := recLine{T: "rec", Run: name(r), Pos: index, Kind: rec.Kind.String(), Archived: archived,
		Time: rec.Time, Deadline: rec.Deadline, Ref: rec.Ref, WorkflowID: rec.WorkflowID, Type: rec.Type,
		Name: rec.Name, MsgID: rec.MsgID, Attempt: rec.Attempt, Gen: rec.Gen, ParentID: rec.ParentID,
		Status: strIf(rec.Status, rec.Status == journal.StatusNone),
		Origin: strIf(rec.Origin, rec.Kind != journal.KindStart && rec.Origin == journal.OriginFresh),
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

type timerLine struct {
	T    string    `json:"t"`
	Run  string    `json:"run"`
	Pos  uint32    `json:"pos"`
	At   int64     `json:"at"`
	Phys *refsPhys `json:"phys,omitempty"`
}

func (d *dumper) timerLines() []any {
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

type msgLine struct {
	T          string    `json:"t"`
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	From       string    `json:"from"`
	Target     string    `json:"target"`
	Parent     string    `json:"parent,omitempty"`
	ParentID   string    `json:"parent_id,omitempty"`
	Type       string    `json:"type,omitempty"`
	Name       string    `json:"name,omitempty"`
	Status     string    `json:"status,omitempty"`
	Deadline   int64     `json:"deadline,omitempty"`
	Sent       int64     `json:"sent,omitempty"`
	Payload    *string   `json:"payload,omitempty"`
	PayloadB64 []byte    `json:"payload_b64,omitempty"`
	Phys       *refsPhys `json:"phys,omitempty"`
}

func (d *dumper) msgLines() []any {
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
				Status: strIf(m.Status, m.Status == journal.StatusNone), Deadline: m.Deadline, Sent: m.Sent}
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

type seenLine struct {
	T          string    `json:"t"`
	ID         string    `json:"id"`
	WorkflowID string    `json:"workflow_id"`
	Phys       *seenPhys `json:"phys,omitempty"`
}

type seenPhys struct {
	Shards []int `json:"shards"`
}

// seenLines renders the receiver dedup entries: one line per message ID
// and receiving workflow, whichever shards hold it (Verify reports an
// entry on a shard its workflow does not belong on).
func (d *dumper) seenLines() []any {
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

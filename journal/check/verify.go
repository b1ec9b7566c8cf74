package check

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
)

// Verify checks st and returns every finding, sorted by shard, run and
// kind. A state that recovery produced from a healthy directory has no
// findings of severity error or warning. Verify only reads st.
func Verify(st *State) []Finding {
	fs, _ := VerifyContext(context.Background(), st)
	return fs
}

// checkEvery is how many runs the checks and the dump go through between
// looks at their context.
const checkEvery = 1000

// VerifyContext is Verify that gives up when ctx is done: it looks at ctx
// before each shard and every checkEvery runs, and then returns ctx.Err()
// and no findings.
func VerifyContext(ctx context.Context, st *State) ([]Finding, error) {
	var out []Finding
	if _, err := st.view(Options{}).verify(ctx, func(f Finding) error { out = append(out, f); return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

// Verify checks the directory d as VerifyContext checks a state, in memory
// bounded by opts.Memory whatever its number of runs, and calls fn with
// every finding in order (by shard, run, kind and detail). It returns the
// number of runs it checked. An error reading a store (damage the reader
// refuses) is returned as is: the caller reports the directory unreadable.
func (d *Dir) Verify(ctx context.Context, opts Options, fn func(Finding) error) (runs int, err error) {
	w := d.view(opts)
	if err := w.countRuns(ctx); err != nil {
		return 0, err
	}
	return w.verify(ctx, fn)
}

// Problems counts the findings that make verify fail.
func Problems(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Problem() {
			n++
		}
	}
	return n
}

// How verify streams. Each shard's runs pass once, in key order: every
// per-run check is made as a run passes, its references are put into the
// reference join (verify_join.go: read per target shard in key order once
// every shard has passed), and what a check needs from more
// than one run is put into the shard's spill map under a prefix: the runs
// of each workflow ID ('I', read back in ID order and merged with the ID
// index, which streams in that order), the timers the journals imply
// joined with the stored ones ('T'), the messages the journals produce
// joined with the outbox by message ID ('P'; the outbox goes in before
// the runs, so a produced message carries its fields only when a stored
// one has its ID) and the outbox's sequence numbers ('S'). Those joins
// are read back in key order once the runs have passed. Message IDs across shards go into a map of
// their own ('X'), and findings into one sorted as they are reported.
// Shards are checked on several goroutines at once (workers(), inOrder):
// each has a verifier of its own, sharing the findings, the message IDs
// and the spill maps under one lock; the findings map sorts what they
// report, so the output does not depend on which finished first.

type verifier struct {
	ctx      context.Context
	w        *view
	sp       *spills
	findings *store.SpillMap
	cross    *store.SpillMap // message IDs across shards
	shared   *verifyShared
	seq      uint64 // keeps join keys unique
	err      error  // the first lookup error
	runs     int
	key, val []byte // a reference join entry being made
}

// verifyShared is what the verifiers of one Verify share.
type verifyShared struct {
	mu     sync.Mutex // over findings, cross, sp, fseq and passed
	fseq   uint64     // keeps finding keys unique
	refs   *refJoin
	passed int // runs checked by all the shards' goroutines (progress)
}

// ranOne counts a checked run across the shards' goroutines and tells
// Options.Progress every progressEvery runs, in order.
func (v *verifier) ranOne() {
	if v.w.opts.Progress == nil {
		return
	}
	v.shared.mu.Lock()
	v.shared.passed++
	v.w.progress(PhaseCheck, v.shared.passed, 0)
	v.shared.mu.Unlock()
}

// forShard is a verifier for one shard's goroutine.
func (v *verifier) forShard() *verifier {
	return &verifier{ctx: v.ctx, w: v.w, sp: v.sp, findings: v.findings, cross: v.cross, shared: v.shared}
}

// sh is the shard being checked.
type sh struct {
	slot int
	shardInfo
	src  source
	join *store.SpillMap
	// stored holds the IDs of the shard's stored messages while they fit
	// a quarter of the join's share (storedAll says they did not): only
	// a produced message with one of those IDs is joined with its value.
	stored    map[string]struct{}
	storedAll bool
}

func (w *view) verify(ctx context.Context, fn func(Finding) error) (runs int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := workers()
	sp, err := newSpills(w.opts, 3+n)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := sp.close(); err == nil {
			err = cerr
		}
	}()
	v := &verifier{ctx: ctx, w: w, sp: sp, findings: sp.new("findings"), cross: sp.new("msgids"), shared: &verifyShared{refs: &refJoin{w: w, m: sp.new("refs")}}}
	directoryRules(w, v.addf)
	produce := func(emit func(int) error) error {
		for slot, src := range w.srcs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if src == nil {
				v.addf(KindShardCount, -1, 0, "slot %d holds no shard", slot)
				continue
			}
			if err := emit(slot); err != nil {
				return err
			}
		}
		return nil
	}
	work := func(_ int, slot int) (int, error) {
		sv := v.forShard()
		if err := sv.shard(slot, w.srcs[slot]); err != nil {
			return 0, err
		}
		if sv.err != nil {
			return 0, sv.err
		}
		return sv.runs, nil
	}
	if err := inOrder(n, produce, work, func(runs int) error { v.runs += runs; return nil }); err != nil {
		return 0, err
	}
	w.progressEnd(PhaseCheck, v.runs)
	if err := v.joinRefs(); err != nil {
		return 0, err
	}
	if err := v.outboxIDsAcrossShards(); err != nil {
		return 0, err
	}
	if v.err != nil {
		return 0, v.err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	err = v.findings.Each(nil, func(k, _ []byte) error {
		f, err := decodeFinding(k)
		if err != nil {
			return err
		}
		return fn(f)
	})
	return v.runs, err
}

func (v *verifier) fail(err error) {
	if v.err == nil {
		v.err = err
	}
}

// addf records a finding. Its spill key sorts findings as sortFindings
// does: by shard, run, kind and detail, then in the order reported.
func (v *verifier) addf(k Kind, shard int, run model.RunNo, format string, args ...any) {
	if _, ok := kinds[k]; !ok {
		panic("check: finding kind without a kinds entry: " + string(k))
	}
	key := appendI64(nil, int64(shard))
	key = appendU64(key, uint64(run))
	key = appendStr(key, string(k))
	key = appendStr(key, fmt.Sprintf(format, args...))
	v.shared.mu.Lock()
	v.shared.fseq++
	err := v.findings.Put(appendU64(key, v.shared.fseq), nil)
	v.shared.mu.Unlock()
	if err != nil {
		v.fail(err)
	}
}

func decodeFinding(k []byte) (Finding, error) {
	if len(k) < 16 {
		return Finding{}, fmt.Errorf("check: a damaged finding key")
	}
	shard := int(int64(binary.BigEndian.Uint64(k) ^ (1 << 63)))
	run := model.RunNo(binary.BigEndian.Uint64(k[8:]))
	kind, rest, err := cutStr(k[16:])
	if err != nil {
		return Finding{}, err
	}
	detail, _, err := cutStr(rest)
	if err != nil {
		return Finding{}, err
	}
	info := kinds[Kind(kind)]
	return Finding{Kind: Kind(kind), Severity: info.sev, Shard: shard, Run: run, Detail: detail, Hint: info.hint}, nil
}

// addFinding reports a finding about a shard (-1: the directory) and a
// run (0: none).
type addFinding func(k Kind, shard int, run model.RunNo, format string, args ...any)

// directoryRules checks w's shard set against fusee.meta, the checkpoint
// headers and the recovery report: facts of the directory, not of its
// runs, which the streaming verifier and the whole-memory oracle of the
// tests both check here.
func directoryRules(w *view, addf addFinding) {
	if len(w.srcs) != w.shardCount {
		addf(KindShardCount, -1, 0, "fusee.meta says %d shards, recovery produced %d", w.shardCount, len(w.srcs))
	}
	for i, s := range w.srcs {
		if s == nil {
			continue
		}
		in := w.infos[i]
		if in.Index != i {
			addf(KindShardIndex, i, 0, "slot %d holds a shard that says it is shard %d", i, in.Index)
		}
		if in.Count != w.shardCount {
			addf(KindShardCount, i, 0, "its checkpoint says %d shards, fusee.meta says %d", in.Count, w.shardCount)
		}
		if in.NextRun == 0 || in.NextRun > model.NoSuchRun {
			addf(KindNextRunInvalid, i, 0, "next run number is %d", in.NextRun)
		}
	}
	checkpointRules(w, addf)
	rep := w.rec
	if rep == nil {
		return
	}
	logEnding(addf, rep)
	seen := map[int]bool{}
	for _, sr := range rep.Shards {
		slot, ok := w.byIndex[sr.Shard]
		if !ok || seen[sr.Shard] {
			addf(KindRecovery, -1, 0, "the recovery report lists shard %d twice or for a shard the state does not have", sr.Shard)
			continue
		}
		seen[sr.Shard] = true
		if sr.CheckpointLSN > sr.LSN {
			addf(KindCheckpointLSN, sr.Shard, 0, "checkpoint LSN %d is past the shard's LSN %d", sr.CheckpointLSN, sr.LSN)
		} else if uint64(sr.Replayed) != sr.LSN-sr.CheckpointLSN {
			// Every log entry takes one LSN, so the tail replayed is the gap.
			addf(KindRecovery, sr.Shard, 0, "recovery replayed %d entries from LSN %d to %d", sr.Replayed, sr.CheckpointLSN, sr.LSN)
		}
		if sr.LSN != w.infos[slot].LSN {
			addf(KindRecovery, sr.Shard, 0, "recovery reports LSN %d, the shard holds %d", sr.LSN, w.infos[slot].LSN)
		}
	}
	for i, s := range w.srcs {
		if s != nil && !seen[w.infos[i].Index] {
			addf(KindRecovery, w.infos[i].Index, 0, "the recovery report does not mention this shard")
		}
	}
}

// checkpointRules checks each shard's current checkpoint header against
// the directory and the recovered state: a checkpoint only ever lags.
func checkpointRules(w *view, addf addFinding) {
	if w.stats == nil {
		return
	}
	for _, ss := range w.stats.Shards {
		h := ss.Checkpoint
		slot, ok := w.byIndex[ss.Shard]
		if !ok {
			addf(KindRecovery, -1, 0, "store statistics for shard %d, which the state does not have", ss.Shard)
			continue
		}
		s := w.infos[slot]
		if h.Shard != ss.Shard {
			addf(KindShardIndex, ss.Shard, 0, "shard %d's checkpoint says it is shard %d's", ss.Shard, h.Shard)
		}
		if h.Count != w.shardCount {
			addf(KindShardCount, ss.Shard, 0, "the checkpoint header says %d shards, fusee.meta says %d", h.Count, w.shardCount)
		}
		if h.LSN > s.LSN {
			addf(KindCheckpointLSN, ss.Shard, 0, "checkpoint LSN %d is past the recovered LSN %d", h.LSN, s.LSN)
		}
		if h.NextRun > s.NextRun || h.NextSeq > s.NextSeq {
			addf(KindRecovery, ss.Shard, 0, "the checkpoint's next run %d and outbox seq %d are past the recovered %d and %d",
				h.NextRun, h.NextSeq, s.NextRun, s.NextSeq)
		}
		if ss.LSN != s.LSN {
			addf(KindRecovery, ss.Shard, 0, "store statistics say LSN %d, the shard holds %d", ss.LSN, s.LSN)
		}
	}
}

// shard runs every per-shard check; it stops with ctx's error when ctx
// is done, and with a store's error when reading one fails.
func (v *verifier) shard(slot int, src source) error {
	v.shared.mu.Lock()
	s := &sh{slot: slot, shardInfo: v.w.infos[slot], src: src, join: v.sp.new("shard")}
	v.shared.mu.Unlock()
	defer func() {
		v.shared.mu.Lock()
		_ = v.sp.drop(s.join)
		v.shared.mu.Unlock()
	}()
	if err := v.storeOutbox(s); err != nil {
		return err
	}
	err := src.runs(v.ctx, func(key model.RunNo, r *model.Run, h []model.Record, archived bool) error {
		v.runs++
		v.ranOne()
		if r.No != key {
			v.addf(KindRunKeyMismatch, s.Index, key, "stored as run %d, the entry says run %d", key, r.No)
		}
		v.runEntry(s, r, h, archived)
		v.joinRun(s, key, r, h)
		return v.err
	})
	if err != nil {
		return err
	}
	err = src.orphans(func(no model.RunNo, r *model.Run, _ int) error {
		if r == nil {
			v.addf(KindArchiveOrphan, s.Index, no, "archived history of a run the shard does not have")
		} else {
			v.addf(KindArchiveOrphan, s.Index, no, "archived history of a run that is %s", r.State)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, step := range []func(*sh) error{v.index, v.timers, v.outbox, v.seen} {
		if err := step(s); err != nil {
			return err
		}
		if v.err != nil {
			return v.err
		}
	}
	return nil
}

// runEntry checks one run as it passes: the rules of the run alone
// (checkRun), then its references, into the reference join. h is its
// history; archived says whether an archive is stored under its number.
func (v *verifier) runEntry(s *sh, r *model.Run, h []model.Record, archived bool) {
	if j := checkRun(v.about(s, r), v.place(s), r, h, archived); j != nil {
		v.references(s, r, j)
	}
}

// about reports findings about run r of shard s.
func (v *verifier) about(s *sh, r *model.Run) addRunFinding {
	return func(k Kind, format string, args ...any) { v.addf(k, s.Index, r.No, format, args...) }
}

// place is where the runs of shard s are checked.
func (v *verifier) place(s *sh) runPlace {
	return runPlace{shard: s.Index, shards: v.w.shardCount, nextRun: s.NextRun, storeGen: s.StoreGen}
}

// logEnding reports how the log ends, saying no more than it proves: a
// clean close vouches for every batch; without one, a dropped tail is what
// a crash mid-write leaves, and nothing shows whether later segments were
// lost.
func logEnding(addf addFinding, rep *journal.RecoveryReport) {
	switch {
	case rep.TornTail != "" && rep.Torn == nil:
		addf(KindTornTail, -1, 0, "recovery dropped a torn log tail: %s", rep.TornTail)
	case rep.Torn != nil:
		addf(KindTornTail, -1, 0, "the engine stopped without closing the log; recovery drops, as the engine's would, %s", rep.Torn)
	case rep.LogEnding == wal.EndStopped:
		addf(KindLogNotClosed, -1, 0, "the engine stopped without closing the log (it ends at %s after an intact batch, with no close record); recovery dropped nothing", rep.LogEnd)
	case rep.LogEnding == wal.EndUnproven:
		addf(KindLogNotClosed, -1, 0, "the log ends at %s with no close record: it was closed by a fusee older than close records, or the engine stopped while closing", rep.LogEnd)
	}
}

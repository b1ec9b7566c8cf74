package check

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
)

// The checks read every shard as streams (source), never as a whole: a
// directory on disk through store.ShardReader (storeSource), a state
// built in memory through its *model.Shard (memSource). What needs more
// than one run at a time (references, sorts, joins by message ID or
// workflow ID) goes through spill maps (store.SpillMap) bounded by
// Options.Memory and lookups on the sources, in key order, once every
// shard has passed (refJoin, verify_join.go: verify's and dump's alike).

// shardInfo is a shard's header as recovery leaves it.
type shardInfo struct {
	Index, Count int
	LSN          uint64
	NextRun      model.RunNo
	NextSeq      uint64
	StoreGen     uint64
}

// source streams one shard.
type source interface {
	info() shardInfo
	// runs calls fn for every run in ascending key (the number it is
	// stored under), with its history (the journal, or a tombstone's
	// archive), and whether an archive is stored under its number.
	runs(ctx context.Context, fn func(key model.RunNo, r *model.Run, hist []model.Record, archived bool) error) error
	// entries is runs without journals: r carries the entry's fields.
	entries(ctx context.Context, fn func(key model.RunNo, r *model.Run) error) error
	// orphans calls fn for every archive (of records records) stored
	// under a number that holds no run (r nil) or a run that is not a
	// tombstone, in ascending number (a store refuses those when read).
	orphans(fn func(no model.RunNo, r *model.Run, records int) error) error
	// run looks run no up with its history; entry without it.
	run(no model.RunNo) (*model.Run, []model.Record, bool, error)
	entry(no model.RunNo) (*model.Run, bool, error)
	// record looks run no up with record pos of its history alone (nil
	// when the history is shorter): n is the history's length, and hist
	// whether it has one at all (a tombstone built in memory may not).
	record(no model.RunNo, pos uint32) (r *model.Run, rec *model.Record, n int, hist, ok bool, err error)
	index(fn func(id string, no model.RunNo) error) error // in workflow ID order
	timers(fn func(model.TimerKey) error) error
	outbox(fn func(key string, m *model.Message) error) error
	seen(fn func(id, wf string) error) error // in message ID order
}

// memSource is a shard built in memory (tests, the simulator).
type memSource struct{ s *model.Shard }

func (m memSource) info() shardInfo {
	s := m.s
	return shardInfo{Index: s.Index, Count: s.Count, LSN: s.LSN, NextRun: s.NextRun, NextSeq: s.NextSeq, StoreGen: s.StoreGen}
}

func (m memSource) runs(ctx context.Context, fn func(model.RunNo, *model.Run, []model.Record, bool) error) error {
	for i, no := range sortedKeys(m.s.Runs) {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r := m.s.Runs[no]
		_, archived := m.s.Archive[r.No]
		if err := fn(no, r, history(m.s, r), archived); err != nil {
			return err
		}
	}
	return nil
}

func (m memSource) entries(ctx context.Context, fn func(model.RunNo, *model.Run) error) error {
	return m.runs(ctx, func(no model.RunNo, r *model.Run, _ []model.Record, _ bool) error { return fn(no, r) })
}

func (m memSource) orphans(fn func(model.RunNo, *model.Run, int) error) error {
	for _, no := range sortedKeys(m.s.Archive) {
		if r, ok := m.s.Runs[no]; !ok || r.State != model.StateTombstone {
			if err := fn(no, r, len(m.s.Archive[no])); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m memSource) run(no model.RunNo) (*model.Run, []model.Record, bool, error) {
	r, ok := m.s.Runs[no]
	if !ok {
		return nil, nil, false, nil
	}
	return r, history(m.s, r), true, nil
}

func (m memSource) entry(no model.RunNo) (*model.Run, bool, error) {
	r, ok := m.s.Runs[no]
	return r, ok, nil
}

func (m memSource) record(no model.RunNo, pos uint32) (*model.Run, *model.Record, int, bool, bool, error) {
	r, ok := m.s.Runs[no]
	if !ok {
		return nil, nil, 0, false, false, nil
	}
	h := history(m.s, r)
	if int(pos) < len(h) {
		return r, &h[pos], len(h), true, true, nil
	}
	return r, nil, len(h), h != nil, true, nil
}

func (m memSource) index(fn func(string, model.RunNo) error) error {
	for _, id := range sortedIDs(m.s.ByID) {
		if err := fn(id, m.s.ByID[id]); err != nil {
			return err
		}
	}
	return nil
}

func (m memSource) timers(fn func(model.TimerKey) error) error {
	for k := range m.s.Timers {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

func (m memSource) outbox(fn func(string, *model.Message) error) error {
	for id, msg := range m.s.Outbox {
		if err := fn(id, msg); err != nil {
			return err
		}
	}
	return nil
}

func (m memSource) seen(fn func(string, string) error) error {
	for _, id := range sortedIDs(m.s.Seen) {
		if err := fn(id, m.s.Seen[id]); err != nil {
			return err
		}
	}
	return nil
}

// storeSource is one shard of a directory on disk.
type storeSource struct{ sr *store.ShardReader }

func (s storeSource) info() shardInfo {
	h := s.sr.Header()
	return shardInfo{Index: h.Shard, Count: h.Count, LSN: h.LSN, NextRun: h.NextRun, NextSeq: h.NextSeq, StoreGen: h.Gen}
}

func (s storeSource) runs(ctx context.Context, fn func(model.RunNo, *model.Run, []model.Record, bool) error) error {
	return s.sr.Runs(ctx, func(r *model.Run, archive []model.Record) error {
		if r.State == model.StateTombstone {
			return fn(r.No, r, archive, true)
		}
		return fn(r.No, r, r.Journal, false)
	})
}

func (s storeSource) entries(ctx context.Context, fn func(model.RunNo, *model.Run) error) error {
	return s.sr.RunEntries(ctx, func(no model.RunNo, e model.RunEntry) error {
		return fn(no, model.RunOfEntry(no, &e))
	})
}

func (storeSource) orphans(func(model.RunNo, *model.Run, int) error) error { return nil }

func (s storeSource) run(no model.RunNo) (*model.Run, []model.Record, bool, error) {
	return s.sr.Run(no)
}

func (s storeSource) entry(no model.RunNo) (*model.Run, bool, error) {
	e, ok, err := s.sr.Entry(no)
	if !ok || err != nil {
		return nil, ok, err
	}
	return model.RunOfEntry(no, &e), true, nil
}

func (s storeSource) record(no model.RunNo, pos uint32) (*model.Run, *model.Record, int, bool, bool, error) {
	e, rec, n, ok, err := s.sr.Record(no, pos)
	if !ok || err != nil {
		return nil, nil, 0, false, ok, err
	}
	return model.RunOfEntry(no, &e), rec, n, true, true, nil
}

func (s storeSource) index(fn func(string, model.RunNo) error) error { return s.sr.Index(fn) }
func (s storeSource) timers(fn func(model.TimerKey) error) error     { return s.sr.Timers(fn) }
func (s storeSource) outbox(fn func(string, *model.Message) error) error {
	return s.sr.Outbox(func(m *model.Message) error { return fn(m.ID, m) })
}
func (s storeSource) seen(fn func(string, string) error) error { return s.sr.Seen(fn) }

// DefaultMemory is the default memory budget of verify, dump and inspect
// (Options.Memory), reshard's default (reshard.DefaultMemory).
const DefaultMemory = 256 << 20

// Options bound what the checks hold in memory.
type Options struct {
	// Memory is the budget of the spill maps (sorts and joins): together
	// they keep at most half of it in memory (the rest is the garbage
	// collector's headroom) and move to scratch stores beyond that (0:
	// DefaultMemory). The shards' own pebble readers come on top.
	Memory int64
	// Scratch is where spill maps go, on the real disk; "" makes a
	// directory in the system temp directory, removed at the end.
	Scratch string
	// Progress, if set, is told how far a pass over the runs has got (see
	// progress.go): phase names the pass, done counts runs, total is
	// the runs expected. Nil costs nothing.
	Progress func(phase string, done, total int64)
	// sealEvery, if set, is every spill map's SpillMap.SealEvery (tests).
	sealEvery int64
}

func (o Options) budget() int64 {
	if o.Memory <= 0 {
		return DefaultMemory
	}
	return o.Memory
}

// scratchDir makes the directory spill maps go to and returns a function
// that removes it. Nothing is written there unless a map spills.
func (o Options) scratchDir() (string, func(), error) {
	dir, err := os.MkdirTemp(o.Scratch, "fusee-check-")
	if err != nil {
		return "", nil, fmt.Errorf("making a scratch directory: %w (name one with --scratch)", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// readerCache is the block cache of the shard readers of a Dir, in all.
const readerCache = 32 << 20

// Dir is a closed data directory opened for the checks: its lock held,
// each shard's store open read-only with its log tail as an overlay
// (store.ShardReader). Memory is the log tails (bounded by how often
// the engine checkpoints) and pebble's readers, not the runs.
type Dir struct {
	Path       string
	Format     string // fusee.meta format=
	LogFormat  int    // fusee.meta log=
	ShardCount int    // fusee.meta shards=
	Recovery   *journal.RecoveryReport
	Stats      *journal.Stats

	lock    *meta.Dir
	readers []*store.ShardReader
}

// OpenDir takes the lock of the closed data directory at dir and opens
// every shard for streaming, read-only: nothing is written and nothing is
// ticked. Errors from opening (in use, interrupted reshard, old log
// format, damage) come back wrapped, as Load's do. Close releases it.
func OpenDir(ctx context.Context, fs vfs.FS, dir string) (_ *Dir, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fs = meta.ReadOnlyFS(fs) // creates no LOCK, in the directory or a store
	lock, err := meta.Open(fs, dir, meta.Options{Log: meta.LogShared})
	if err != nil {
		return nil, err
	}
	m := lock.Meta()
	d := &Dir{Path: dir, Format: m.Format, LogFormat: m.Log, ShardCount: m.Shards, lock: lock}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	headers, err := store.ReadHeaders(ctx, fs, dir, m.Shards)
	if err != nil {
		return nil, err
	}
	tails, rep, err := journal.ReadTails(ctx, fs, dir, headers)
	if err != nil {
		return nil, err
	}
	d.Recovery = rep
	// Each shard's reader has a block cache of its own, its share of
	// readerCache, so that their memory does not grow with the shard
	// count; readers working at once then wait on no cache lock of one
	// another's (reshard's readers measured that: source.go there).
	stats := &journal.Stats{}
	for i := range headers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cache := pebble.NewCache(max(readerCache/int64(m.Shards), 1<<20))
		sr, err := store.OpenShardReaderCache(fs, dir, i, m.Shards, &tails[i], cache)
		cache.Unref() // the store holds its own reference until it closes
		if err != nil {
			return nil, err
		}
		d.readers = append(d.readers, sr)
		h := sr.Header()
		stats.Shards = append(stats.Shards, journal.ShardStats{Shard: i, Checkpoint: headers[i], LSN: h.LSN,
			TailEntries: len(tails[i].Entries), TailBytes: tails[i].Bytes, StoreBytes: sr.StoreBytes()})
		tails[i] = store.ShardTail{} // applied: the reader's overlay holds what it needs
	}
	if stats.LogSegments, stats.LogBytes, err = journal.LogSize(fs, dir); err != nil {
		return nil, err
	}
	d.Stats = stats
	return d, nil
}

// Close closes the shards and releases the lock.
func (d *Dir) Close() error {
	var errs []error
	for _, sr := range d.readers {
		errs = append(errs, sr.Close())
	}
	d.readers = nil
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
		d.lock = nil
	}
	return errors.Join(errs...)
}

// view is what the checks run over: the directory's meta and its shards
// as sources, by slot and by index.
type view struct {
	dir        string
	format     string
	logFormat  int
	shardCount int
	srcs       []source // slot i; nil for an empty slot
	infos      []shardInfo
	byIndex    map[int]int // shard index -> the first slot that says it is that shard
	rec        *journal.RecoveryReport
	stats      *journal.Stats
	opts       Options
	counted    int64 // the runs countRuns counted (0: not counted)
	// pointRefs makes verify resolve each reference by a point lookup as
	// its run passes instead of by the sorted join (verify_join.go): the
	// join's oracle in tests.
	pointRefs bool
}

func newView(srcs []source, opts Options) *view {
	w := &view{srcs: srcs, infos: make([]shardInfo, len(srcs)), byIndex: map[int]int{}, opts: opts}
	for i, s := range srcs {
		if s == nil {
			continue
		}
		w.infos[i] = s.info()
		if _, dup := w.byIndex[w.infos[i].Index]; !dup {
			w.byIndex[w.infos[i].Index] = i
		}
	}
	return w
}

func (st *State) view(opts Options) *view {
	srcs := make([]source, len(st.Shards))
	for i, s := range st.Shards {
		if s != nil {
			srcs[i] = memSource{s}
		}
	}
	w := newView(srcs, opts)
	w.dir, w.format, w.logFormat, w.shardCount, w.rec, w.stats = st.Dir, st.Format, st.LogFormat, st.ShardCount, st.Recovery, st.Stats
	return w
}

func (d *Dir) view(opts Options) *view {
	srcs := make([]source, len(d.readers))
	for i, sr := range d.readers {
		srcs[i] = storeSource{sr}
	}
	w := newView(srcs, opts)
	w.dir, w.format, w.logFormat, w.shardCount, w.rec, w.stats = d.Path, d.Format, d.LogFormat, d.ShardCount, d.Recovery, d.Stats
	return w
}

func shardsView(shards []*model.Shard, opts Options) *view { return FromShards(shards).view(opts) }

// target is what a lookup found: the run (its entry's fields) and, when
// asked for, one record of its history.
type target struct {
	slot int           // the source's slot (-1 when there is none)
	r    *model.Run    // nil when not resolved
	rec  *model.Record // record pos of its history; nil when shorter
	n    int           // the history's length, when a record was asked for
	hist bool          // whether it has a history at all
}

// lookup resolves run no on the shard with index shard, and when pos is
// not negative reads record pos of its history. NoSuchRun is never looked
// up: it names no run on any shard, whatever shard the reference says.
func (w *view) lookup(shard int, no model.RunNo, pos int) (target, resolution, error) {
	t := target{slot: -1}
	if no == model.NoSuchRun {
		return t, noSuchRun, nil
	}
	slot, ok := w.byIndex[shard]
	if !ok {
		return t, badShard, nil
	}
	return w.lookupSlot(slot, no, pos)
}

// lookupSlot is lookup on the source in slot: it resolves whatever no is
// (NoSuchRun too, which a stored run never has).
func (w *view) lookupSlot(slot int, no model.RunNo, pos int) (target, resolution, error) {
	t := target{slot: slot}
	var found bool
	var err error
	if pos >= 0 {
		t.r, t.rec, t.n, t.hist, found, err = w.srcs[slot].record(no, uint32(pos))
	} else {
		t.r, found, err = w.srcs[slot].entry(no)
	}
	if err != nil || found {
		return t, resolved, err
	}
	t.r = nil
	if no == 0 || no >= w.infos[slot].NextRun {
		return t, unissued, nil
	}
	return t, dangling, nil
}

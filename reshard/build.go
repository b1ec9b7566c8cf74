package reshard

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/extsort"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// noSuchRun is the reserved run number a dangling reference is rewritten
// to: no run is ever given it.
const noSuchRun = model.NoSuchRun

// clearTokenGen zeroes a record's token generation bits (the digest leaves
// them out: every reshard changes them).
func clearTokenGen(rec *model.Record) { rec.Token.Gen = 0 }

// setTokenGen stamps a record's token with the new store generation.
func setTokenGen(rec *model.Record, gen uint64) {
	if rec.Token.Run != 0 {
		rec.Token.Gen = model.TokenGen(gen)
	}
}

// build is pass 2: it reads every old shard again, rewrites each run, its
// archive, its outbox messages, dedup and index entries for its new shard
// and number, and puts the new stores' keys into a sink (sink.go) that
// writes each new store under newDir, with a new, empty shared log. It
// returns the old directory's digest.
//
// Several workers (rewriters) rewrite old shards at once, each with its
// own lookups, digest part, counts and way into the sink. Nothing a
// worker writes depends on which worker read which shard, or in which
// order: the sort gives every new store its keys in key order, a direct
// write draws each new store from one old shard, the digests are sums,
// the report's lists are kept in key order, and outbox messages, the one
// thing numbered in reading order, are numbered by old shard and then in
// each old shard's order (outboxSeq).
//
// A dry run (newDir "") does all of that but keep the keys and compute
// the digest: it counts what the real run would write and reports the
// token changes (its digest is nil).
func (r *resharder) build(ctx context.Context, p *plan.Plan, newDir string, rep *Report) (*digest, error) {
	// The phase's clock starts here, where the report's does (the new
	// log is created and synced in it), not at its first shard.
	r.progress("rewrite", 0, int64(r.oldN))
	b, err := r.newBuilder(p, newDir, rep)
	if err != nil {
		return nil, err
	}
	defer b.sink.Abort()
	idle := make(chan *worker, len(b.workers))
	for _, w := range b.workers {
		idle <- w
	}
	err = parallel(ctx, r.oldN, len(b.workers), func(i int) error {
		w := <-idle
		defer func() { idle <- w }()
		return w.readShard(ctx, i)
	}, func(done int) {
		// A direct write has no phase of its own: the stores are
		// written within the rewrite (progress interleaving two phases
		// would restart each one's clock). The last shard is reported
		// once the phase's work is done: a sort's last chunk is settled
		// after it.
		if done < r.oldN {
			r.progress("rewrite", int64(done), int64(r.oldN))
		}
	})
	if err != nil {
		return nil, err
	}
	b.gather()
	rep.Counts.RunsRenumbered = p.Renumbered
	rep.Counts.RunsMoved = p.Moved
	if b.dry {
		r.progress("rewrite", int64(r.oldN), int64(r.oldN))
		return b.oldDigest, nil
	}
	if err := b.sink.Finish(ctx); err != nil {
		return nil, err
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	// The phase's last tick once everything is synced, where the
	// report's clock stops: the rewrite's for a direct write, the
	// write's after a sort (which reached the rewrite's in Finish).
	if b.sorter == nil {
		r.progress("rewrite", int64(r.oldN), int64(r.oldN))
	} else {
		r.progress("write", int64(r.newN), int64(r.newN))
	}
	return b.oldDigest, nil
}

// rewriters is how many old shards pass 2 rewrites at once: one per core
// the process may use, at most one per old shard. Each worker runs three
// goroutines (readAhead: reading, the old digest, the rewrite), which
// share its core's work with the sort's flushes and the store writers.
func (r *resharder) rewriters() int {
	if Testing.rewriters > 0 {
		return min(Testing.rewriters, r.oldN)
	}
	return max(min(runtime.GOMAXPROCS(0), r.oldN), 1)
}

// A builder is one pass 2: the old shards read by its workers, each
// one's keys rewritten into the sink.
type builder struct {
	r      *resharder
	p      *plan.Plan
	rep    *Report
	newDir string
	dry    bool
	newGen uint64
	pos    wal.Position // where the new log's first batch goes
	// seq is each new shard's next outbox number, once every worker is
	// done (gather).
	seq       []uint64
	oldDigest *digest // the old directory's, once gathered (nil in a dry run)
	// checks are the new shards' digests, computed from what their store
	// writers get (streamdigest.go).
	checks  []*streamDigest
	sorter  *extsort.Sorter // the sort sink's
	sink    sink
	workers []*worker
	listMu  sync.Mutex // the report's lists are shared by the workers
	final   *counted   // the headers a sort writes, after the workers
}

// A worker rewrites one old shard at a time: what it counts, digests and
// sends on is its own until gather adds it up.
type worker struct {
	b *builder
	// The rewrite (this goroutine) and the old digest (the reader's) look
	// runs up, each through a cache of its own.
	mine, theirs *plan.Cache
	oldCanon     *canon
	oldDigest    *digest // its part (nil in a dry run)
	counts       Counts
	out          *counted
	rw           *rawRewriter
	// sent counts the outbox messages it gave each new shard; in a
	// direct write each new shard's come from one old shard, hence one
	// worker.
	sent     []uint64
	firstErr error // the first lookup error of the mapper
	// kb and vb are the key and value of an outbox, dedup, timer or index
	// entry being put (the sink copies them).
	kb, vb []byte
}

// newBuilder sets up pass 2: the new log and shards folder of a real run,
// the digests, the sink and the workers.
func (r *resharder) newBuilder(p *plan.Plan, newDir string, rep *Report) (*builder, error) {
	b := &builder{r: r, p: p, rep: rep, newDir: newDir, dry: newDir == "", newGen: p.StoreGen + 1,
		seq: make([]uint64, r.newN)}
	oldDigest, newDigest := newDigestPair()
	r.newDigest = newDigest
	rep.NewShardBytes = make([]int64, r.newN)
	if !b.dry {
		// Nothing is read back in a dry run: the old digest would be work
		// for nothing.
		b.oldDigest = oldDigest
		var err error
		if b.pos, err = r.createLog(newDir); err != nil {
			return nil, err
		}
		if err := r.fs.MkdirAll(r.fs.PathJoin(newDir, "shards"), 0o755); err != nil {
			return nil, err
		}
		b.checks = make([]*streamDigest, r.newN)
		for j := range b.checks {
			b.checks[j] = newStreamDigest(p, newDigest, j)
		}
	}
	n := r.rewriters()
	lanes := b.lanes(n)
	for k := range n {
		w := &worker{b: b, mine: plan.NewCache(p), theirs: plan.NewCache(p), sent: make([]uint64, r.newN)}
		if !b.dry {
			w.oldDigest = oldDigest.empty()
		}
		w.oldCanon = &canon{id: func(ref model.RunRef) (uint64, bool, error) {
			m, ok, err := w.theirs.Lookup(ref.Shard, ref.Run)
			return m.ID, ok, err
		}}
		w.out = &counted{counts: &w.counts, newBytes: make([]int64, r.newN), next: lanes[k], write: !b.dry}
		w.rw = &rawRewriter{mapper: w.mapRef, gen: b.newGen, put: w.out.Put, counts: &w.counts, token: b.addToken}
		b.workers = append(b.workers, w)
	}
	if b.sorter != nil {
		b.final = &counted{counts: &Counts{}, newBytes: make([]int64, r.newN), next: lanes[0], write: true}
	}
	return b, nil
}

// lanes makes b's sink and a lane into it for each of n workers.
func (b *builder) lanes(n int) []lane {
	r := b.r
	lanes := make([]lane, n)
	switch {
	case b.dry:
		b.sink = drySink{}
		for k := range lanes {
			lanes[k] = drySink{}
		}
	case r.growsDirectly():
		d := &directSink{b: b, writers: make([]*store.StoreWriter, r.newN)}
		b.sink = d
		for k := range lanes {
			lanes[k] = d
		}
	default:
		b.sorter = extsort.New(r.fs, r.fs.PathJoin(r.scratch, "sort"), r.newN, r.sortBudget(b.p), r.storeWorkers())
		if Testing.merged != nil {
			b.sorter.OnMerged(Testing.merged)
		}
		b.sink = &sortSink{b: b, sorter: b.sorter}
		for k, w := range b.sorter.Writers(n) {
			lanes[k] = w
		}
	}
	return lanes
}

// gather adds up what the workers counted, digested and sent once every
// old shard is read.
func (b *builder) gather() {
	for _, w := range b.workers {
		w.out.addTo(b.rep)
		for j, n := range w.sent {
			b.seq[j] += n
		}
		if b.oldDigest != nil {
			b.oldDigest.merge(w.oldDigest)
		}
	}
	for j := range b.seq {
		b.seq[j]++ // the next number
	}
}

// header is new shard j's checkpoint header, once its outbox is whole:
// next is the number its next outbox message will have.
func (b *builder) header(j int, next uint64) []byte {
	hdr := model.CheckpointHeader{Version: model.StoreVersion, Shard: j, Count: b.r.newN,
		NextRun: b.p.NextRun[j], NextSeq: next, Log: b.pos, Now: b.p.Now, Created: b.p.Created, Gen: b.newGen}
	return model.EncodeHeader(nil, &hdr)
}

// addToken adds a pending completion to the report's list, in the order
// of the old shard and run it belongs to (the order of a reading of the
// old shards one after the other).
func (b *builder) addToken(oldShard int, oldNo model.RunNo, t TokenChange) error {
	var order [12]byte
	binary.BigEndian.PutUint32(order[:4], uint32(oldShard))
	binary.BigEndian.PutUint64(order[4:], uint64(oldNo))
	b.listMu.Lock()
	defer b.listMu.Unlock()
	return b.rep.Tokens.add(order[:], t)
}

// mapRef is the rewrite's model.RunMapper: where a reference's run went,
// or noSuchRun (counted as dangling); a lookup error is kept in firstErr.
func (w *worker) mapRef(_ model.RefField, ref model.RunRef) model.RunRef {
	if ref.Run == noSuchRun {
		w.counts.DanglingRefs++
		return model.RunRef{Run: noSuchRun}
	}
	m, ok, err := w.mine.Lookup(ref.Shard, ref.Run)
	if err != nil {
		if w.firstErr == nil {
			w.firstErr = err
		}
		return ref
	}
	if !ok {
		w.counts.DanglingRefs++
		return model.RunRef{Run: noSuchRun}
	}
	n := model.RunRef{Shard: m.Shard, Run: m.No}
	if n != ref {
		w.counts.RefsRewritten++
	}
	return n
}

// finish syncs the new layout and checks every new shard's digest.
func (b *builder) finish() error {
	r := b.r
	if err := meta.SyncDir(r.fs, r.fs.PathJoin(b.newDir, "shards")); err != nil {
		return err
	}
	if err := meta.SyncDir(r.fs, b.newDir); err != nil {
		return err
	}
	for _, c := range b.checks {
		if err := c.finish(); err != nil {
			return err
		}
		r.newDigest.merge(c.d)
	}
	return nil
}

// readShard reads old shard i whole into the sink: its runs, outbox,
// dedup entries, timers and index.
func (w *worker) readShard(ctx context.Context, i int) error {
	b := w.b
	if err := b.sink.Begin(i); err != nil {
		return err
	}
	src, err := b.r.source(b.r.dir, i, b.r.oldN, b.r.tails)
	if err != nil {
		return err
	}
	err = readAhead(ctx, src, func(run *store.RawRun) error {
		w.oldCanon.rawRun(w.oldDigest, i, run)
		return w.oldCanon.err
	}, func(run *store.RawRun) error { return w.run(i, run) })
	for _, part := range []func(int, shardSource) error{w.outbox, w.seen, w.timers, w.index} {
		if err == nil {
			err = part(i, src)
		}
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.firstErr
	}
	if err == nil {
		err = w.oldCanon.err
	}
	if err != nil {
		return err
	}
	return b.sink.End(i, func(j int) error { return w.out.Put(j, store.HeaderKey(), b.header(j, w.sent[j]+1)) })
}

// run rewrites old shard i's run; an unfinished run that changes number
// goes into the report's list here, where its pending tokens are known.
func (w *worker) run(i int, run *store.RawRun) error {
	m, ok, err := w.mine.Lookup(i, run.No)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("internal error: run %d of old shard %d is not in the plan", run.No, i)
	}
	if err := w.rw.run(run, i, m); err != nil {
		return err
	}
	if m.No != run.No && plan.Unfinished(run.Entry.State) {
		// The list's keys: by new shard, new number.
		rr := renumberedRun(run.Entry.WorkflowID, i, run.No, m)
		rr.Tokens = append(make([]RunToken, 0, len(w.rw.pending)), w.rw.pending...)
		w.b.listMu.Lock()
		err := w.b.rep.Renumbered.add(renumberedOrder(m.Shard, uint64(m.No)), rr)
		w.b.listMu.Unlock()
		if err != nil {
			return err
		}
	}
	return w.firstErr
}

// outboxSeq is the number old shard i's n-th message (from 1) for new
// shard j has as the sink gets it. A direct write gives new shard j the
// messages of one old shard: n is its number. Through the sort, the
// number is provisional, i and n packed so that the sort puts new shard
// j's messages in old shard order and then each old shard's order, the
// order a reading of the old shards one after the other numbers them in,
// and writeStore numbers them from 1 in that order.
func (b *builder) outboxSeq(i int, n uint64) uint64 {
	if b.sorter == nil {
		return n
	}
	return uint64(i)<<provisionalShift | n
}

// provisionalShift leaves 2^40 messages to each old shard's outbox for
// one new shard in a provisional outbox number.
const provisionalShift = 40

// outbox moves old shard i's outbox messages to their sender's new shard,
// renumbered in the order they come.
func (w *worker) outbox(i int, src shardSource) error {
	b := w.b
	var mine []uint64 // old shard i's messages for each new shard so far
	return src.Outbox(func(msg *model.Message) error {
		w.oldCanon.message(w.oldDigest, *msg)
		nm := *msg
		nm.MapRefs(w.mapRef)
		if nm.From.Run == noSuchRun || nm.From.IsZero() {
			return b.r.damaged(i, "old shard %d's outbox message %q names sender %s, which does not exist", i, msg.ID, msg.From)
		}
		j := nm.From.Shard
		if mine == nil {
			mine = make([]uint64, b.r.newN)
		}
		mine[j]++
		w.sent[j]++
		nm.Seq = b.outboxSeq(i, mine[j])
		w.counts.Outbox++
		if j != i {
			w.counts.OutboxMoved++
		}
		w.kb, w.vb = store.AppendOutboxKey(w.kb[:0], nm.Seq), model.EncodeMessage(w.vb[:0], &nm)
		return w.out.Put(j, w.kb, w.vb)
	})
}

// seen moves old shard i's dedup entries to their workflow's new shard.
func (w *worker) seen(i int, src shardSource) error {
	return src.Seen(func(id, wf string) error {
		w.oldCanon.seen(w.oldDigest, id, wf)
		j := model.ShardOf(wf, w.b.r.newN)
		w.counts.Dedup++
		if j != i {
			w.counts.DedupMoved++
		}
		w.kb, w.vb = store.AppendSeenKey(w.kb[:0], id), model.EncodeSeenValue(w.vb[:0], wf)
		return w.out.Put(j, w.kb, w.vb)
	})
}

// timers moves old shard i's timers with their runs.
func (w *worker) timers(i int, src shardSource) error {
	return src.Timers(func(k model.TimerKey) error {
		w.oldCanon.timer(w.oldDigest, k, i)
		m, ok, err := w.mine.Lookup(i, k.Run)
		if err != nil {
			return err
		}
		if !ok {
			return w.b.r.damaged(i, "old shard %d has a timer of run %d, which does not exist", i, k.Run)
		}
		w.counts.Timers++
		k.Run = m.No
		w.kb = store.AppendTimerKey(w.kb[:0], k)
		return w.out.Put(m.Shard, w.kb, nil)
	})
}

// index moves old shard i's ID index entries with their runs.
func (w *worker) index(i int, src shardSource) error {
	return src.Index(func(wf string, no model.RunNo) error {
		w.oldCanon.index(w.oldDigest, wf, model.RunRef{Shard: i, Run: no})
		m, ok, err := w.mine.Lookup(i, no)
		if err != nil {
			return err
		}
		if !ok {
			return w.b.r.damaged(i, "old shard %d's index names run %d for %q, which does not exist", i, no, wf)
		}
		w.kb, w.vb = store.AppendIndexKey(w.kb[:0], wf), model.AppendRunNo(w.vb[:0], m.No)
		return w.out.Put(m.Shard, w.kb, w.vb)
	})
}

// growsDirectly says whether a real run writes its new stores as it
// reads the old ones, without a sort: a grow to a multiple of at most
// maxDirectStores (an upgrade, which keeps the count, is one).
func (r *resharder) growsDirectly() bool {
	return r.newN%r.oldN == 0 && r.newN/r.oldN <= maxDirectStores && !Testing.sortGrows
}

// maxDirectStores is the most new stores a grow to a multiple writes at
// once (a store being written holds a pebble store open and a table
// buffer per key kind); a larger factor goes through the sort.
const maxDirectStores = 4

// createLog creates the new, empty shared log in newDir, with a new log
// ID, and returns where its first batch will go.
func (r *resharder) createLog(newDir string) (wal.Position, error) {
	w, err := wal.Create(r.fs, wal.Dir(r.fs, newDir), wal.Options{})
	if err != nil {
		return wal.Position{}, fmt.Errorf("creating the new log in %s: %w", newDir, err)
	}
	err = w.Sync()
	pos, perr := w.NextPosition()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = perr
	}
	if err != nil {
		return wal.Position{}, fmt.Errorf("creating the new log in %s: %w", newDir, err)
	}
	return pos, nil
}

// writeStore writes new shard j's store from the sorted keys of its
// prefix, each one digested by check on its way, its outbox messages
// numbered from 1 in the order they come (outboxSeq). The merge from the
// sort, the writer and the digest each run on a goroutine of their own
// (pairFanout). Several stores are written at once: sorter takes no Put
// meanwhile.
func (r *resharder) writeStore(sorter *extsort.Sorter, newDir string, j int, check *streamDigest) error {
	if err := r.fs.MkdirAll(store.ShardDir(r.fs, newDir, j), 0o755); err != nil {
		return err
	}
	sw, err := store.NewStoreWriter(r.fs, store.StoreDir(r.fs, newDir, j))
	if err != nil {
		return err
	}
	var seq uint64
	var kb []byte
	fan := newPairFanout(check.add, sw.Add)
	err = sorter.Each(j, func(k, v []byte) error {
		if k[0] == store.KeyOutbox {
			seq++
			kb = store.AppendOutboxKey(kb[:0], seq)
			k = kb
		}
		return fan.add(k, v)
	})
	if ferr := fan.finish(); ferr != nil && (err == nil || err == errFanoutFailed) {
		err = ferr // the consumer's own error says what is wrong
	}
	if err != nil {
		sw.Abort()
		return err
	}
	if err := sw.Finish(); err != nil {
		return err
	}
	return meta.SyncDir(r.fs, store.ShardDir(r.fs, newDir, j))
}

// storeWorkers is how many new stores are written or read back at once:
// one per core the process may use, at least two (two overlap one's
// syncs with the other's work), and at most one per maxStoreMemory of
// the budget (a store being written holds a pebble store open, a table
// buffer per key kind, its share of the sort's read buffers and the
// fanoutBatches of pairs its merge hands its writer and digest, each of
// the three on a goroutine of its own).
//
// When the new stores do not divide among them, the last round would
// leave a core idle while it runs (at 8->3 on two cores, the third store
// was written alone: 1.2 s of a 4.6 s rewrite, most of it on one core),
// so the count is raised to the smallest, up to twice as many, whose last
// round fills the cores (fillRounds).
func (r *resharder) storeWorkers() int {
	cores, most := runtime.GOMAXPROCS(0), maxStoreWorkers(r.budget)
	return fillRounds(r.newN, min(max(cores, 2), most), most, cores)
}

// fillRounds is how many of n items to work on at once, k unless the
// last round of k leaves some of cores idle: then the smallest count
// from k to min(2k, most) whose last round holds at least cores items or
// none left over (n itself, when it is in that range), else k.
func fillRounds(n, k, most, cores int) int {
	for c := k; c <= min(2*k, most, n); c++ {
		if left := n % c; left == 0 || left >= cores {
			return c
		}
	}
	return k
}

// maxStoreWorkers is the most stores written at once whatever the cores:
// one per maxStoreMemory of budget, at least two.
func maxStoreWorkers(budget int64) int {
	return max(int(budget/maxStoreMemory), 2)
}

// maxStoreMemory is the budget a store being written is counted for.
const maxStoreMemory = 32 << 20

// parallel calls work(0..n-1), k at a time, and progress (on the
// caller's goroutine) with the number done after each. It stops starting
// new work at the first error or when ctx is done, waits for what runs,
// and returns the first error.
func parallel(ctx context.Context, n, k int, work func(i int) error, progress func(done int)) error {
	next := make(chan int)
	errs := make(chan error)
	for range min(max(k, 1), n) {
		go func() {
			for i := range next {
				errs <- work(i)
			}
		}()
	}
	var first error
	started, done := 0, 0
	for done < started || (started < n && first == nil) {
		var send chan int // nil: nothing more to start
		if started < n && first == nil {
			if err := ctx.Err(); err != nil {
				first = err
				continue
			}
			send = next
		}
		select {
		case send <- started:
			started++
		case err := <-errs:
			done++
			if err != nil && first == nil {
				first = err
			}
			if first == nil {
				progress(done)
			}
		}
	}
	close(next)
	return first
}

// readAhead streams src's runs through three goroutines: a reader that
// decodes each run, one that calls look (the old digest) and the
// caller's, which calls fn (the rewrite), with a bounded queue between
// each, so that reading, digesting and rewriting overlap. Runs reach look
// and fn in order, and go back to src (Recycle) once fn is done with
// them: neither look nor fn may keep anything of a run. The first error
// of any stops them all.
func readAhead(ctx context.Context, src shardSource, look, fn func(*store.RawRun) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	read, looked := make(chan *store.RawRun, 128), make(chan *store.RawRun, 128)
	var readErr, lookErr error
	go func() {
		defer close(read)
		readErr = src.RawRuns(ctx, func(run *store.RawRun) error {
			select {
			case read <- run:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	go func() {
		defer close(looked)
		for run := range read {
			if lookErr != nil {
				continue // drain what the reader queued
			}
			if lookErr = look(run); lookErr != nil {
				cancel()
				continue
			}
			select {
			case looked <- run:
			case <-ctx.Done():
				lookErr = ctx.Err() // a run fn will not see: never a silent end
			}
		}
	}()
	var err error
	for it := range looked {
		if err == nil {
			if err = fn(it); err != nil {
				cancel() // the others stop; drain what they queued
			} else {
				src.Recycle(it)
			}
		}
	}
	if err == nil {
		err = lookErr
	}
	if err == nil {
		err = readErr
	}
	return err
}

// checkNew returns the new shards' digest, computed as they were written
// (streamdigest.go), after opening every new shard the way the engine
// opens it (its store, its header, the new log): a store that does not
// open stops the reshard here. With Testing.readBackCheck set, every new
// shard is also read back whole and its digest must equal the stream's.
func (r *resharder) checkNew(ctx context.Context, p *plan.Plan, newDir string) (*digest, error) {
	r.progress("check", 0, int64(r.newN)) // where the report's clock starts: the log is read in it
	tails, _, err := logTails(ctx, r.fs, newDir, r.newN, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the new shards: %w", err)
	}
	for j := range r.newN {
		src, err := r.source(newDir, j, r.newN, tails)
		if err == nil {
			err = src.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("opening new shard %d: %w", j, err)
		}
		if !Testing.readBackCheck && j+1 < r.newN { // else the read back below counts the shards
			r.progress("check", int64(j+1), int64(r.newN)) // the last once all is synced (checkAndKeep)
		}
	}
	if Testing.readBackCheck {
		back, err := r.readBack(ctx, p, newDir)
		if err != nil {
			return nil, err
		}
		if diff := r.newDigest.diff(back); diff != "" {
			return nil, fmt.Errorf("internal error: the new shards read back differ from what was written to them: %s", diff)
		}
	}
	return r.newDigest, nil
}

// readBack reads every new shard the way the engine will, and computes
// its digest.
func (r *resharder) readBack(ctx context.Context, p *plan.Plan, newDir string) (*digest, error) {
	d := r.newDigest.empty()
	tails, _, err := logTails(ctx, r.fs, newDir, r.newN, nil)
	if err != nil {
		return nil, fmt.Errorf("reading back the new shards: %w", err)
	}
	parts := make([]*digest, r.newN)
	err = parallel(ctx, r.newN, r.storeWorkers(), func(j int) error {
		part := d.empty()
		parts[j] = part
		ids := plan.NewCache(p)
		c := &canon{id: func(ref model.RunRef) (uint64, bool, error) { return ids.IdentityAt(ref.Shard, ref.Run) }}
		if err := r.readBackShard(ctx, c, part, newDir, j, tails); err != nil {
			return fmt.Errorf("reading back new shard %d: %w", j, err)
		}
		return nil
	}, func(done int) {
		if done < r.newN { // the last once all is synced (checkAndKeep)
			r.progress("check", int64(done), int64(r.newN))
		}
	})
	if err != nil {
		return nil, err
	}
	for _, part := range parts {
		d.merge(part)
	}
	return d, nil
}

// readBackShard adds new shard j's content to d, read the way the engine
// will read it.
func (r *resharder) readBackShard(ctx context.Context, c *canon, d *digest, newDir string, j int, tails []store.ShardTail) error {
	src, err := r.source(newDir, j, r.newN, tails)
	if err != nil {
		return err
	}
	err = src.RawRuns(ctx, func(run *store.RawRun) error {
		c.rawRun(d, j, run)
		return c.err
	})
	if err == nil {
		err = src.Outbox(func(m *model.Message) error { c.message(d, *m); return c.err })
	}
	if err == nil {
		err = src.Seen(func(id, wf string) error { c.seen(d, id, wf); return nil })
	}
	if err == nil {
		err = src.Timers(func(k model.TimerKey) error { c.timer(d, k, j); return c.err })
	}
	if err == nil {
		err = src.Index(func(wf string, no model.RunNo) error {
			c.index(d, wf, model.RunRef{Shard: j, Run: no})
			return c.err
		})
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	return err
}

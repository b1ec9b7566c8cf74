package reshard

import (
	"context"
	"fmt"

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
// A dry run (newDir "") does all of that but keep the keys and compute
// the digest: it counts what the real run would write and reports the
// token changes (its digest is nil).
func (r *resharder) build(ctx context.Context, p *plan.Plan, newDir string, rep *Report) (*digest, error) {
	b, err := r.newBuilder(p, newDir, rep)
	if err != nil {
		return nil, err
	}
	defer b.out.Abort()
	r.progress("rewrite", 0, int64(r.oldN)) // the phase's clock starts here, not at its first shard
	for i := range r.oldN {
		if err := b.readShard(ctx, i); err != nil {
			return nil, err
		}
		// A direct write has no phase of its own: the stores are written
		// within the rewrite (progress interleaving two phases would
		// restart each one's clock). The last shard is reported once the
		// phase's work is done: a sort's last chunk is settled after it.
		if i+1 < r.oldN {
			r.progress("rewrite", int64(i+1), int64(r.oldN))
		}
	}
	rep.Counts.RunsRenumbered = p.Renumbered
	rep.Counts.RunsMoved = p.Moved
	if _, sorts := b.out.(*counted).next.(*sortSink); !sorts { // a sort reaches it in Finish
		r.progress("rewrite", int64(r.oldN), int64(r.oldN))
	}
	if b.dry {
		return b.oldDigest, nil
	}
	if err := b.out.Finish(ctx); err != nil {
		return nil, err
	}
	return b.oldDigest, b.finish()
}

// A builder is one pass 2: the old shards read in order, each one's keys
// rewritten into out.
type builder struct {
	r      *resharder
	p      *plan.Plan
	rep    *Report
	newDir string
	dry    bool
	newGen uint64
	seq    []uint64     // each new shard's next outbox number
	pos    wal.Position // where the new log's first batch goes
	// The rewrite (this goroutine) and the old digest (the reader's) look
	// runs up, each through a cache of its own.
	mine, theirs *plan.Cache
	oldCanon     *canon
	oldDigest    *digest
	// checks are the new shards' digests, computed from what their store
	// writers get (streamdigest.go).
	checks   []*streamDigest
	sorter   *extsort.Sorter // the sort sink's
	out      sink
	rw       *rawRewriter
	firstErr error // the first lookup error of the mapper
}

// newBuilder sets up pass 2: the new log and shards folder of a real run,
// the digests and the sink.
func (r *resharder) newBuilder(p *plan.Plan, newDir string, rep *Report) (*builder, error) {
	b := &builder{r: r, p: p, rep: rep, newDir: newDir, dry: newDir == "", newGen: p.StoreGen + 1,
		seq: make([]uint64, r.newN), mine: plan.NewCache(p), theirs: plan.NewCache(p)}
	oldDigest, newDigest := newDigestPair()
	r.newDigest = newDigest
	if !b.dry {
		// Nothing is read back in a dry run: the old digest would be work
		// for nothing.
		b.oldDigest = oldDigest
	}
	for j := range b.seq {
		b.seq[j] = 1
	}
	if !b.dry {
		var err error
		if b.pos, err = r.createLog(newDir); err != nil {
			return nil, err
		}
		if err := r.fs.MkdirAll(r.fs.PathJoin(newDir, "shards"), 0o755); err != nil {
			return nil, err
		}
	}
	b.oldCanon = &canon{id: func(ref model.RunRef) (uint64, bool, error) {
		m, ok, err := b.theirs.Lookup(ref.Shard, ref.Run)
		return m.ID, ok, err
	}}
	rep.NewShardBytes = make([]int64, r.newN)
	if !b.dry {
		b.checks = make([]*streamDigest, r.newN)
		for j := range b.checks {
			b.checks[j] = newStreamDigest(p, newDigest, j)
		}
	}
	var next sink = drySink{}
	switch {
	case b.dry:
	case r.growsDirectly():
		next = &directSink{b: b, writers: map[int]*store.StoreWriter{}}
	default:
		b.sorter = extsort.New(r.fs, r.fs.PathJoin(r.scratch, "sort"), r.newN, r.budget/mapShare, workers)
		next = &sortSink{b: b, sorter: b.sorter}
	}
	b.out = &counted{rep: rep, next: next, write: !b.dry}
	b.rw = &rawRewriter{mapper: b.mapRef, gen: b.newGen, put: b.out.Put, rep: rep}
	return b, nil
}

// header is new shard j's checkpoint header, once its outbox is whole.
func (b *builder) header(j int) []byte {
	hdr := model.CheckpointHeader{Version: model.StoreVersion, Shard: j, Count: b.r.newN,
		NextRun: b.p.NextRun[j], NextSeq: b.seq[j], Log: b.pos, Now: b.p.Now, Created: b.p.Created, Gen: b.newGen}
	return model.EncodeHeader(nil, &hdr)
}

// mapRef is the rewrite's model.RunMapper: where a reference's run went,
// or noSuchRun (counted as dangling); a lookup error is kept in firstErr.
func (b *builder) mapRef(_ model.RefField, ref model.RunRef) model.RunRef {
	if ref.Run == noSuchRun {
		b.rep.Counts.DanglingRefs++
		return model.RunRef{Run: noSuchRun}
	}
	m, ok, err := b.mine.Lookup(ref.Shard, ref.Run)
	if err != nil {
		if b.firstErr == nil {
			b.firstErr = err
		}
		return ref
	}
	if !ok {
		b.rep.Counts.DanglingRefs++
		return model.RunRef{Run: noSuchRun}
	}
	n := model.RunRef{Shard: m.Shard, Run: m.No}
	if n != ref {
		b.rep.Counts.RefsRewritten++
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
	b.rep.Spilled = b.rep.Spilled || (b.sorter != nil && b.sorter.Spilled())
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
func (b *builder) readShard(ctx context.Context, i int) error {
	if err := b.out.Begin(i); err != nil {
		return err
	}
	src, err := openSource(b.r.fs, b.r.dir, i, b.r.oldN, b.r.tails)
	if err != nil {
		return err
	}
	err = readAhead(ctx, src, func(run *store.RawRun) error {
		b.oldCanon.rawRun(b.oldDigest, i, run)
		return b.oldCanon.err
	}, func(run *store.RawRun) error { return b.run(i, run) })
	for _, part := range []func(int, shardSource) error{b.outbox, b.seen, b.timers, b.index} {
		if err == nil {
			err = part(i, src)
		}
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = b.firstErr
	}
	if err == nil {
		err = b.oldCanon.err
	}
	if err != nil {
		return err
	}
	return b.out.End(i)
}

// run rewrites old shard i's run; an unfinished run that changes number
// goes into the report's list here, where its pending tokens are known.
func (b *builder) run(i int, run *store.RawRun) error {
	m, ok, err := b.mine.Lookup(i, run.No)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("internal error: run %d of old shard %d is not in the plan", run.No, i)
	}
	if err := b.rw.run(run, i, m); err != nil {
		return err
	}
	if m.No != run.No && plan.Unfinished(run.Entry.State) {
		// The list's keys: by new shard, new number.
		rr := renumberedRun(run.Entry.WorkflowID, i, run.No, m)
		rr.Tokens = append(make([]RunToken, 0, len(b.rw.pending)), b.rw.pending...)
		if err := b.rep.Renumbered.add(renumberedOrder(m.Shard, uint64(m.No)), rr); err != nil {
			return err
		}
	}
	return b.firstErr
}

// outbox moves old shard i's outbox messages to their sender's new shard,
// renumbered in the order they come.
func (b *builder) outbox(i int, src shardSource) error {
	return src.Outbox(func(msg *model.Message) error {
		b.oldCanon.message(b.oldDigest, *msg)
		nm := *msg
		nm.MapRefs(b.mapRef)
		if nm.From.Run == noSuchRun || nm.From.IsZero() {
			return b.r.damaged(i, "old shard %d's outbox message %q names sender %s, which does not exist", i, msg.ID, msg.From)
		}
		j := nm.From.Shard
		nm.Seq = b.seq[j]
		b.seq[j]++
		b.rep.Counts.Outbox++
		if j != i {
			b.rep.Counts.OutboxMoved++
		}
		return b.out.Put(j, store.OutboxKey(nm.Seq), model.EncodeMessage(nil, &nm))
	})
}

// seen moves old shard i's dedup entries to their workflow's new shard.
func (b *builder) seen(i int, src shardSource) error {
	return src.Seen(func(id, wf string) error {
		b.oldCanon.seen(b.oldDigest, id, wf)
		j := model.ShardOf(wf, b.r.newN)
		b.rep.Counts.Dedup++
		if j != i {
			b.rep.Counts.DedupMoved++
		}
		return b.out.Put(j, store.SeenKey(id), model.EncodeSeenValue(nil, wf))
	})
}

// timers moves old shard i's timers with their runs.
func (b *builder) timers(i int, src shardSource) error {
	return src.Timers(func(k model.TimerKey) error {
		b.oldCanon.timer(b.oldDigest, k, i)
		m, ok, err := b.mine.Lookup(i, k.Run)
		if err != nil {
			return err
		}
		if !ok {
			return b.r.damaged(i, "old shard %d has a timer of run %d, which does not exist", i, k.Run)
		}
		b.rep.Counts.Timers++
		k.Run = m.No
		return b.out.Put(m.Shard, store.TimerKeyBytes(k), nil)
	})
}

// index moves old shard i's ID index entries with their runs.
func (b *builder) index(i int, src shardSource) error {
	return src.Index(func(wf string, no model.RunNo) error {
		b.oldCanon.index(b.oldDigest, wf, model.RunRef{Shard: i, Run: no})
		m, ok, err := b.mine.Lookup(i, no)
		if err != nil {
			return err
		}
		if !ok {
			return b.r.damaged(i, "old shard %d's index names run %d for %q, which does not exist", i, no, wf)
		}
		return b.out.Put(m.Shard, store.IndexKey(wf), store.EncodeIndexValue(m.No))
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
// prefix, each one digested by check on its way. Several run at once:
// sorter takes no Put meanwhile.
func (r *resharder) writeStore(sorter *extsort.Sorter, newDir string, j int, check *streamDigest) error {
	if err := r.fs.MkdirAll(store.ShardDir(r.fs, newDir, j), 0o755); err != nil {
		return err
	}
	sw, err := store.NewStoreWriter(r.fs, store.StoreDir(r.fs, newDir, j))
	if err != nil {
		return err
	}
	err = sorter.Each(j, func(k, v []byte) error {
		if err := check.add(k, v); err != nil {
			return err
		}
		return sw.Add(k, v)
	})
	if err != nil {
		sw.Abort()
		return err
	}
	if err := sw.Finish(); err != nil {
		return err
	}
	return meta.SyncDir(r.fs, store.ShardDir(r.fs, newDir, j))
}

// workers is how many stores are written or read back at once: the
// machines reshard runs on have a few cores, and each store's work is
// one goroutine's.
const workers = 2

// parallel calls work(0..n-1), workers at a time, and progress (on the
// caller's goroutine) with the number done after each. It stops starting
// new work at the first error or when ctx is done, waits for what runs,
// and returns the first error.
func parallel(ctx context.Context, n int, work func(i int) error, progress func(done int)) error {
	next := make(chan int)
	errs := make(chan error)
	for range min(workers, n) {
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
// and fn in order. The first error of any stops them all.
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
	tails, err := logTails(ctx, r.fs, newDir, r.newN)
	if err != nil {
		return nil, fmt.Errorf("opening the new shards: %w", err)
	}
	r.progress("check", 0, int64(r.newN))
	for j := range r.newN {
		src, err := openSource(r.fs, newDir, j, r.newN, tails)
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
	tails, err := logTails(ctx, r.fs, newDir, r.newN)
	if err != nil {
		return nil, fmt.Errorf("reading back the new shards: %w", err)
	}
	parts := make([]*digest, r.newN)
	err = parallel(ctx, r.newN, func(j int) error {
		part := d.empty()
		parts[j] = part
		c := &canon{id: func(ref model.RunRef) (uint64, bool, error) { return p.IdentityAt(ref.Shard, ref.Run) }}
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
	src, err := openSource(r.fs, newDir, j, r.newN, tails)
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

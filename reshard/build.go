package reshard

import (
	"context"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
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
// and number, sorts the new stores' keys (runsort.go) and writes
// each new store under newDir with a new, empty shared log. It returns the
// old directory's digest.
//
// A dry run (newDir "") does all of that but keep the keys and compute
// the digest: it counts what the real run would write and reports the
// token changes (its digest is nil).
func (r *resharder) build(ctx context.Context, p *plan, newDir string, rep *Report) (*digest, error) {
	dry := newDir == ""
	sorter := newRunSorter(r.fs, r.fs.PathJoin(r.scratch, "sort"), r.newN, r.budget/mapShare)
	oldDigest, newDigest := newDigestPair()
	r.newDigest = newDigest
	if dry {
		// Nothing is read back: the old digest would be work for nothing.
		oldDigest = nil
	}
	newGen := p.storeGen + 1
	seq := make([]uint64, r.newN) // each new shard's next outbox number
	for j := range seq {
		seq[j] = 1
	}
	// Growing to a multiple renumbers nothing and each new shard draws
	// from one old shard: every kind of key reaches its new store in
	// ascending order, so the stores are written as the old shard is read
	// (a StoreWriter takes each kind in order), with no sort. Timers are
	// then the old store's own, which come in order too.
	// Each old shard then has newN/oldN stores open at once: only for a
	// few, so that the memory stays within the budget whatever the count.
	direct := !dry && r.growsDirectly()
	var pos wal.Position
	if !dry {
		var err error
		if pos, err = r.createLog(newDir); err != nil {
			return nil, err
		}
		if err := r.fs.MkdirAll(r.fs.PathJoin(newDir, "shards"), 0o755); err != nil {
			return nil, err
		}
	}
	writers := map[int]*store.StoreWriter{} // direct: the stores being written
	defer func() {
		for _, sw := range writers {
			sw.Abort()
		}
	}()
	header := func(j int) []byte {
		hdr := model.CheckpointHeader{Version: model.StoreVersion, Shard: j, Count: r.newN,
			NextRun: p.nextRun[j], NextSeq: seq[j], Log: pos, Now: p.now, Created: p.created, Gen: newGen}
		return model.EncodeHeader(nil, &hdr)
	}
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	// The rewrite (this goroutine) and the old digest (the reader's) look
	// runs up, each through a cache of its own.
	mine, theirs := &lookupCache{p: p}, &lookupCache{p: p}
	mapper := func(_ model.RefField, ref model.RunRef) model.RunRef {
		if ref.Run == noSuchRun {
			rep.Counts.DanglingRefs++
			return model.RunRef{Run: noSuchRun}
		}
		m, ok, err := mine.lookup(ref.Shard, ref.Run)
		if err != nil {
			fail(err)
			return ref
		}
		if !ok {
			rep.Counts.DanglingRefs++
			return model.RunRef{Run: noSuchRun}
		}
		n := model.RunRef{Shard: m.Shard, Run: m.No}
		if n != ref {
			rep.Counts.RefsRewritten++
		}
		return n
	}
	oldCanon := &canon{id: func(ref model.RunRef) (uint64, bool, error) {
		m, ok, err := theirs.lookup(ref.Shard, ref.Run)
		return m.ID, ok, err
	}}
	rep.NewShardBytes = make([]int64, r.newN)
	// The new shards' digests, computed from what their store writers get
	// (streamdigest.go).
	var checks []*streamDigest
	if !dry {
		checks = make([]*streamDigest, r.newN)
		for j := range checks {
			checks[j] = newStreamDigest(p, newDigest, j)
		}
	}
	put := func(shard int, key, value []byte) error {
		rep.Counts.BytesWritten += int64(len(key) + len(value))
		rep.NewShardBytes[shard] += int64(len(key) + len(value))
		if dry {
			return nil
		}
		if corruptWrite != nil {
			var keep bool
			if value, keep = corruptWrite(shard, key, value); !keep {
				return nil
			}
		}
		if direct {
			if err := checks[shard].add(key, value); err != nil {
				return err
			}
			return writers[shard].Add(key, value)
		}
		return sorter.Put(shard, key, value)
	}
	rw := &rawRewriter{mapper: mapper, gen: newGen, put: put, rep: rep}
	r.progress("rewrite", 0, int64(r.oldN)) // the phase's clock starts here, not at its first shard
	for i := range r.oldN {
		if direct {
			for j := i; j < r.newN; j += r.oldN {
				if err := r.fs.MkdirAll(store.ShardDir(r.fs, newDir, j), 0o755); err != nil {
					return nil, err
				}
				sw, err := store.NewStoreWriter(r.fs, store.StoreDir(r.fs, newDir, j))
				if err != nil {
					return nil, err
				}
				writers[j] = sw
			}
		}
		src, err := openSource(r.fs, r.dir, i, r.oldN, r.tails)
		if err != nil {
			return nil, err
		}
		err = readAhead(ctx, src, func(run *store.RawRun) error {
			oldCanon.rawRun(oldDigest, i, run)
			return oldCanon.err
		}, func(run *store.RawRun) error {
			m, ok, err := mine.lookup(i, run.No)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("internal error: run %d of old shard %d is not in the plan", run.No, i)
			}
			if err := rw.run(run, i, m); err != nil {
				return err
			}
			if p.compact != nil && m.No != run.No && unfinished(run.Entry.State) {
				// The compact map keeps no workflow IDs: the report's
				// list is made here, in the order the spill path gives
				// it (its keys: by new shard, new number).
				if err := rep.Renumbered.add(renumberedOrder(m.Shard, uint64(m.No)), renumberedRun(run.Entry.WorkflowID, i, run.No, m)); err != nil {
					return err
				}
			}
			return firstErr
		})
		if err == nil {
			err = src.Outbox(func(msg *model.Message) error {
				oldCanon.message(oldDigest, *msg)
				nm := *msg
				nm.MapRefs(mapper)
				if nm.From.Run == noSuchRun || nm.From.IsZero() {
					return fmt.Errorf("old shard %d's outbox message %q names sender %s, which does not exist: the directory is damaged; run `fusee verify %s`",
						i, msg.ID, msg.From, r.dir)
				}
				j := nm.From.Shard
				nm.Seq = seq[j]
				seq[j]++
				rep.Counts.Outbox++
				if j != i {
					rep.Counts.OutboxMoved++
				}
				return put(j, store.OutboxKey(nm.Seq), model.EncodeMessage(nil, &nm))
			})
		}
		if err == nil {
			err = src.Seen(func(id, wf string) error {
				oldCanon.seen(oldDigest, id, wf)
				j := model.ShardOf(wf, r.newN)
				rep.Counts.Dedup++
				if j != i {
					rep.Counts.DedupMoved++
				}
				return put(j, store.SeenKey(id), model.EncodeSeenValue(nil, wf))
			})
		}
		if err == nil {
			err = src.Timers(func(k model.TimerKey) error {
				oldCanon.timer(oldDigest, k, i)
				m, ok, err := mine.lookup(i, k.Run)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("old shard %d has a timer of run %d, which does not exist: the directory is damaged; run `fusee verify %s`", i, k.Run, r.dir)
				}
				rep.Counts.Timers++
				k.Run = m.No
				return put(m.Shard, store.TimerKeyBytes(k), nil)
			})
		}
		if err == nil {
			err = src.Index(func(wf string, no model.RunNo) error {
				oldCanon.index(oldDigest, wf, model.RunRef{Shard: i, Run: no})
				m, ok, err := mine.lookup(i, no)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("old shard %d's index names run %d for %q, which does not exist: the directory is damaged; run `fusee verify %s`", i, no, wf, r.dir)
				}
				return put(m.Shard, store.IndexKey(wf), store.EncodeIndexValue(m.No))
			})
		}
		if cerr := src.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = firstErr
		}
		if err == nil {
			err = oldCanon.err
		}
		if err != nil {
			return nil, err
		}
		for j := i; direct && j < r.newN; j += r.oldN {
			if err := put(j, store.HeaderKey(), header(j)); err != nil {
				return nil, err
			}
			sw := writers[j]
			delete(writers, j)
			if err := sw.Finish(); err != nil {
				return nil, err
			}
			if err := meta.SyncDir(r.fs, store.ShardDir(r.fs, newDir, j)); err != nil {
				return nil, err
			}
		}
		// A direct write has no phase of its own: the stores are written
		// within the rewrite (progress interleaving two phases would
		// restart each one's clock). The last shard is reported once the
		// phase's work is done: a sort's last chunk is settled after it.
		if i+1 < r.oldN {
			r.progress("rewrite", int64(i+1), int64(r.oldN))
		}
	}
	rep.Counts.RunsRenumbered = p.renumbered
	rep.Counts.RunsMoved = p.moved
	if dry || direct {
		r.progress("rewrite", int64(r.oldN), int64(r.oldN))
	}
	if dry {
		return oldDigest, nil
	}

	if !direct {
		for j := range r.newN {
			if err := put(j, store.HeaderKey(), header(j)); err != nil {
				return nil, err
			}
		}
		if err := sorter.Settle(); err != nil {
			return nil, err
		}
		r.progress("rewrite", int64(r.oldN), int64(r.oldN))
		r.progress("write", 0, int64(r.newN))
		err := parallel(ctx, r.newN, func(j int) error { return r.writeStore(sorter, newDir, j, checks[j]) },
			func(done int) { r.progress("write", int64(done), int64(r.newN)) })
		if err != nil {
			return nil, err
		}
	}
	if err := meta.SyncDir(r.fs, r.fs.PathJoin(newDir, "shards")); err != nil {
		return nil, err
	}
	if err := meta.SyncDir(r.fs, newDir); err != nil {
		return nil, err
	}
	rep.Spilled = rep.Spilled || sorter.Spilled()
	for _, c := range checks {
		if err := c.finish(); err != nil {
			return nil, err
		}
		newDigest.merge(c.d)
	}
	return oldDigest, nil
}

// growsDirectly says whether a real run writes its new stores as it
// reads the old ones, without a sort: a grow to a multiple of at most
// maxDirectStores (an upgrade, which keeps the count, is one).
func (r *resharder) growsDirectly() bool {
	return r.newN%r.oldN == 0 && r.newN/r.oldN <= maxDirectStores && directWrite
}

// directWrite lets a grow to a multiple write its stores as it reads (a
// test turns it off to compare with the sorted path).
var directWrite = true

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
func (r *resharder) writeStore(sorter *runSorter, newDir string, j int, check *streamDigest) error {
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
// open stops the reshard here. With readBackCheck set (tests), every new
// shard is also read back whole and its digest must equal the stream's.
func (r *resharder) checkNew(ctx context.Context, p *plan, newDir string) (*digest, error) {
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
		if !readBackCheck && j+1 < r.newN { // else the read back below counts the shards
			r.progress("check", int64(j+1), int64(r.newN)) // the last once all is synced (rebuild)
		}
	}
	if readBackCheck {
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

// corruptWrite, when set (tests), may change or drop (keep false) each
// key's value the rewrite hands over, as a bug in the rewrite would.
var corruptWrite func(shard int, key, value []byte) (_ []byte, keep bool)

// readBackCheck makes checkNew read every new shard back as well (tests).
var readBackCheck = false

// readBack reads every new shard the way the engine will, and computes
// its digest.
func (r *resharder) readBack(ctx context.Context, p *plan, newDir string) (*digest, error) {
	d := r.newDigest.empty()
	tails, err := logTails(ctx, r.fs, newDir, r.newN)
	if err != nil {
		return nil, fmt.Errorf("reading back the new shards: %w", err)
	}
	parts := make([]*digest, r.newN)
	err = parallel(ctx, r.newN, func(j int) error {
		part := d.empty()
		parts[j] = part
		c := &canon{id: func(ref model.RunRef) (uint64, bool, error) { return p.identityAt(ref.Shard, ref.Run) }}
		if err := r.readBackShard(ctx, c, part, newDir, j, tails); err != nil {
			return fmt.Errorf("reading back new shard %d: %w", j, err)
		}
		return nil
	}, func(done int) {
		if done < r.newN { // the last once all is synced (rebuild)
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

package reshard

import (
	"context"

	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/extsort"
)

// A sink is where pass 2's rewrite puts the new stores' keys (build.go):
// a dry run's counts only (drySink), the stores written as the old
// shards are read (directSink: a grow to a small multiple), or the
// external sort and then the stores (sortSink). Each rewrite worker puts
// its keys through a lane of its own (the sort's are its Writers), and
// through counted first, which counts them for the report.
type sink interface {
	// Begin and End frame the reading of old shard i, on the worker's
	// goroutine; End puts, through header, the header of each new shard
	// that old shard i alone feeds (a direct write's).
	Begin(i int) error
	End(i int, header func(j int) error) error
	// Finish writes and syncs what is left once every old shard is read.
	Finish(ctx context.Context) error
	// Abort drops what a failed build left open.
	Abort()
}

// A lane is one worker's way into the sink.
type lane interface {
	// Put adds key and value to new shard j's store.
	Put(j int, key, value []byte) error
}

// counted counts every key for the report, and (a testing knob, writing
// sinks only) lets Testing.corruptWrite change or drop it, before its lane.
type counted struct {
	counts   *Counts
	newBytes []int64 // by new shard
	next     lane
	write    bool // the sink writes stores: Testing.corruptWrite applies
}

func (c *counted) Put(j int, key, value []byte) error {
	c.counts.BytesWritten += int64(len(key) + len(value))
	c.newBytes[j] += int64(len(key) + len(value))
	if c.write && Testing.corruptWrite != nil {
		var keep bool
		if value, keep = Testing.corruptWrite(j, key, value); !keep {
			return nil
		}
	}
	return c.next.Put(j, key, value)
}

// addTo adds what c counted to rep's counts and new shards' bytes.
func (c *counted) addTo(rep *Report) {
	rep.Counts.add(c.counts)
	for j, n := range c.newBytes {
		rep.NewShardBytes[j] += n
	}
}

// drySink keeps nothing: a dry run only counts.
type drySink struct{}

func (drySink) Put(int, []byte, []byte) error    { return nil }
func (drySink) Begin(int) error                  { return nil }
func (drySink) End(int, func(j int) error) error { return nil }
func (drySink) Finish(context.Context) error     { return nil }
func (drySink) Abort()                           {}

// directSink writes the new stores as the old shards are read: growing
// to a multiple renumbers nothing and each new shard draws from one old
// shard (j = i, i+oldN, ...), so every kind of key reaches its new store
// in ascending order (a StoreWriter takes each kind in order), with no
// sort. Each old shard has newN/oldN stores open at once, and the workers
// write disjoint stores: one lane serves them all.
type directSink struct {
	b       *builder
	writers []*store.StoreWriter // by new shard: the stores being written
}

func (s *directSink) Put(j int, key, value []byte) error {
	if err := s.b.checks[j].add(key, value); err != nil {
		return err
	}
	return s.writers[j].Add(key, value)
}

func (s *directSink) Begin(i int) error {
	r, newDir := s.b.r, s.b.newDir
	for j := i; j < r.newN; j += r.oldN {
		if err := r.fs.MkdirAll(store.ShardDir(r.fs, newDir, j), 0o755); err != nil {
			return err
		}
		sw, err := store.NewStoreWriter(r.fs, store.StoreDir(r.fs, newDir, j))
		if err != nil {
			return err
		}
		s.writers[j] = sw
	}
	return nil
}

// End finishes the stores old shard i fed: their header, then synced.
func (s *directSink) End(i int, header func(j int) error) error {
	r, newDir := s.b.r, s.b.newDir
	for j := i; j < r.newN; j += r.oldN {
		if err := header(j); err != nil {
			return err
		}
		sw := s.writers[j]
		s.writers[j] = nil
		if err := sw.Finish(); err != nil {
			return err
		}
		if err := meta.SyncDir(r.fs, store.ShardDir(r.fs, newDir, j)); err != nil {
			return err
		}
	}
	return nil
}

func (s *directSink) Finish(context.Context) error { return nil }

func (s *directSink) Abort() {
	for _, sw := range s.writers {
		if sw != nil {
			sw.Abort()
		}
	}
}

// sortSink sorts the new stores' keys (internal/extsort: the workers'
// lanes are its Writers), then writes every store from its sorted keys,
// storeWorkers at a time.
type sortSink struct {
	b      *builder
	sorter *extsort.Sorter
}

func (s *sortSink) Begin(int) error                  { return nil }
func (s *sortSink) End(int, func(j int) error) error { return nil }
func (s *sortSink) Abort()                           {}

// Finish puts every new shard's header (through the first lane: the
// workers are done), settles the sort and writes the stores.
func (s *sortSink) Finish(ctx context.Context) error {
	b, r := s.b, s.b.r
	for j := range r.newN {
		if err := b.final.Put(j, store.HeaderKey(), b.header(j, b.seq[j])); err != nil {
			return err
		}
	}
	b.final.addTo(b.rep)
	if err := s.sorter.Settle(); err != nil {
		return err
	}
	r.progress("rewrite", int64(r.oldN), int64(r.oldN))
	r.progress("write", 0, int64(r.newN))
	return parallel(ctx, r.newN, r.storeWorkers(), func(j int) error { return r.writeStore(s.sorter, b.newDir, j, b.checks[j]) },
		func(done int) {
			if done < r.newN { // the last once all is synced (build)
				r.progress("write", int64(done), int64(r.newN))
			}
		})
}

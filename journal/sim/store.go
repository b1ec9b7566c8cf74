package sim

import (
	"fmt"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// backend is what the engine needs from a data directory. Two
// implementations share every line of engine code: a real directory
// (journal.DB: log, stores, checkpoints) and plain in-memory shards, which
// the unit tests use to check engine logic without persistence and to
// compare against what a directory recovers.
type backend interface {
	shards() []*model.Shard
	commit(ops []journal.ShardOp) error
	checkpoint() error
	setNow(now int64)
	now() int64
	// evict turns on dropping checkpointed state from memory (a no-op in
	// memory) and resident counts the runs in memory.
	evict(keep int)
	resident() int
	// eachRun calls fn for every run of shard i; right after a checkpoint
	// for a directory (it reads the store).
	eachRun(i int, fn func(*model.Run) error) error
	// allRuns calls fn for every run of shard i, at any time (an
	// evicting directory reads the runs not in memory from its store).
	allRuns(i int, fn func(*model.Run) error) error
	// trim drops from memory what was only read back (allRuns' callers).
	trim()
}

// dbBackend drives a journal.DB.
type dbBackend struct{ db *journal.DB }

func (b dbBackend) shards() []*model.Shard { return b.db.Shards }
func (b dbBackend) commit(ops []journal.ShardOp) error {
	return b.db.Commit(ops)
}
func (b dbBackend) checkpoint() error                              { return b.db.Checkpoint() }
func (b dbBackend) setNow(now int64)                               { b.db.SetNow(now) }
func (b dbBackend) now() int64                                     { return b.db.Now }
func (b dbBackend) evict(keep int)                                 { b.db.SetEvictKeep(keep) }
func (b dbBackend) resident() int                                  { return b.db.Resident() }
func (b dbBackend) trim()                                          { b.db.DropUnchanged() }
func (b dbBackend) allRuns(i int, fn func(*model.Run) error) error { return b.db.EachRun(i, fn) }
func (b dbBackend) eachRun(i int, fn func(*model.Run) error) error {
	return b.db.StoredRuns(i, fn)
}

// memBackend applies ops straight to in-memory shards, as recovery would.
// Like a directory, it keeps the clock only at checkpoints: the log has no
// clock, so an engine reopening either finds the time of its last batch in
// the journals.
type memBackend struct {
	sh    []*model.Shard
	clk   int64 // the clock as last set
	cpNow int64 // the clock at the last checkpoint
	// checkpoints counts Checkpoint calls; memory has nothing to write.
	checkpoints int
}

func newMemBackend(n int) *memBackend {
	b := &memBackend{sh: make([]*model.Shard, n)}
	for i := range b.sh {
		b.sh[i] = model.NewShard(i, n)
	}
	return b
}

func (b *memBackend) shards() []*model.Shard { return b.sh }
func (b *memBackend) commit(ops []journal.ShardOp) error {
	for i := range ops {
		so := &ops[i]
		if so.Shard < 0 || so.Shard >= len(b.sh) {
			return fmt.Errorf("op for shard %d of %d", so.Shard, len(b.sh))
		}
		if err := b.sh[so.Shard].Apply(&so.Op); err != nil {
			return fmt.Errorf("shard %d: %w", so.Shard, err)
		}
	}
	return nil
}
func (b *memBackend) checkpoint() error                              { b.checkpoints++; b.cpNow = b.clk; return nil }
func (b *memBackend) setNow(now int64)                               { b.clk = now }
func (b *memBackend) now() int64                                     { return b.cpNow }
func (b *memBackend) evict(int)                                      {}
func (b *memBackend) resident() int                                  { return 0 }
func (b *memBackend) trim()                                          {}
func (b *memBackend) allRuns(i int, fn func(*model.Run) error) error { return b.eachRun(i, fn) }
func (b *memBackend) eachRun(i int, fn func(*model.Run) error) error {
	for _, r := range b.sh[i].SortedRuns() {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

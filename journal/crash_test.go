package journal

import (
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/wal"
	"pgregory.net/rapid"
)

// crasher takes a crash image of a crashable MemFS at its k-th write
// operation (from any goroutine: ours or pebble's): a clone holding what
// was synced and, at random, some of what was not.
type crasher struct {
	mem      *vfs.MemFS
	at       int64
	n        atomic.Int64
	armed    atomic.Bool
	unsynced int
	rng      *rand.Rand

	mu    sync.Mutex
	image *vfs.MemFS
	acked int64 // commits acknowledged when the image was taken
	live  *atomic.Int64
}

func (c *crasher) MaybeError(op errorfs.Op) error {
	if !c.armed.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	if c.n.Add(1) == c.at {
		c.crash()
	}
	return nil
}

func (c *crasher) crash() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.image != nil {
		return
	}
	c.acked = c.live.Load()
	c.image = c.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: c.unsynced, RNG: c.rng})
}

func (c *crasher) String() string { return "crasher" }

// replayModel applies the first n committed batches to fresh shards.
func replayModel(t *rapid.T, shards int, batches [][]ShardOp, n int) []*model.Shard {
	out := make([]*model.Shard, shards)
	for i := range out {
		out[i] = model.NewShard(i, shards)
	}
	for _, b := range batches[:n] {
		for _, sop := range b {
			op := sop.Op
			if err := out[sop.Shard].Apply(&op); err != nil {
				t.Fatalf("replaying the model: %v", err)
			}
			out[sop.Shard].LSN++
		}
	}
	return out
}

// TestCrashDuringCommitAndCheckpoint stops the world at a random write
// operation of a random workload (inside Create, Commit, Checkpoint or a
// pebble background job) and opens what a crash would leave. Every
// acknowledged commit survives; at most the one in flight is added; the
// directory always opens (once fusee.meta exists) and accepts commits and
// checkpoints again.
//
// The crash image keeps either none of the unsynced data (power loss) or
// all of it (the process died). A random part of it would also reorder
// unsynced directory entries, which pebble itself does not survive: it
// creates a MANIFEST and then a marker naming it and syncs the directory
// once, after both, so an image with the marker and without the MANIFEST
// fails to open. Torn log tails are tested apart (TestTornLogTail).
func TestCrashDuringCommitAndCheckpoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewCrashableMem()
		var acked atomic.Int64
		c := &crasher{
			mem: mem, at: int64(rapid.IntRange(1, 300).Draw(t, "crash at write op")),
			unsynced: rapid.SampledFrom([]int{0, 100}).Draw(t, "unsynced %"),
			rng:      rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1)),
			live:     &acked,
		}
		fs := errorfs.Wrap(mem, c)
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		created := false
		var batches [][]ShardOp
		w := newWorkload(shards)
		inCreate := rapid.IntRange(0, 4).Draw(t, "crash may hit Create") == 0
		c.armed.Store(inCreate)
		db, err := Create(fs, "/d", CreateOptions{Shards: shards, SegmentSize: 4 << 10})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		created = c.image == nil // a crash image taken before this is of an unfinished Create
		c.armed.Store(true)
		for range rapid.IntRange(0, 30).Draw(t, "batches") {
			ops := w.batch(t, 5)
			batches = append(batches, ops)
			if err := db.Commit(ops); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			acked.Add(1)
			if rapid.IntRange(0, 4).Draw(t, "checkpoint") == 0 {
				if err := db.Checkpoint(); err != nil {
					t.Fatalf("Checkpoint: %v", err)
				}
			}
		}
		c.crash() // if the k-th op never came: crash now
		if err := db.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		img := c.image
		rdb, rep, err := Open(img, "/d", OpenOptions{})
		if err != nil {
			if _, serr := img.Stat("/d/fusee.meta"); !created && serr != nil {
				return // the crash came before Create wrote fusee.meta: not a data directory
			}
			t.Fatalf("Open after a crash (%d commits acknowledged): %v", c.acked, err)
		}
		// Which prefix of the commits did it recover? The LSNs say.
		var got uint64
		for _, s := range rdb.Shards {
			got += s.LSN
		}
		n := -1
		var total uint64
		for j := 0; j <= len(batches); j++ {
			if total == got {
				n = j
				break
			}
			if j < len(batches) {
				total += uint64(len(batches[j]))
			}
		}
		if n < int(c.acked) || n > int(c.acked)+1 {
			t.Fatalf("recovered %d entries = %d commits, but %d were acknowledged at the crash (torn: %q)", got, n, c.acked, rep.TornTail)
		}
		checkShardsEqual(t, "recovered after crash vs model", rdb.Shards, replayModel(t, shards, batches, n))
		// The image is always taken before Close: the log must not claim a
		// clean close, and a tail it drops is a stopped writer's.
		if rep.LogEnding == wal.EndClosed || (rep.Torn != nil && rep.LogEnding != wal.EndStopped) {
			t.Fatalf("a crashed engine's log reads as %v (torn %q)", rep.LogEnding, rep.TornTail)
		}

		// The directory goes on: commit, checkpoint, reopen.
		w2 := &workload{model: replayModel(t, shards, batches, n), ids: w.ids, msgs: w.msgs, time: w.time}
		more := w2.batch(t, 5)
		if err := rdb.Commit(more); err != nil {
			t.Fatalf("Commit after recovery: %v", err)
		}
		if rapid.Bool().Draw(t, "checkpoint after recovery") {
			if err := rdb.Checkpoint(); err != nil {
				t.Fatalf("Checkpoint after recovery: %v", err)
			}
		}
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
		rdb, _, err = Open(img, "/d", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("second Open after a crash: %v", err)
		}
		defer rdb.Close()
		checkShardsEqual(t, "reopened after crash and more commits", rdb.Shards, w2.model)
	})
}

// TestLogWriteErrorStopsTheDB injects a write error into the log at a
// random write: the Commit or Checkpoint that meets it fails, the DB then
// refuses every commit, and the directory reopens with every acknowledged
// commit (and at most the failed one).
func TestLogWriteErrorStopsTheDB(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		var n atomic.Int64
		var armed atomic.Bool
		at := int64(rapid.IntRange(1, 80).Draw(t, "failing log write"))
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if armed.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.Contains(op.Path, "/wal/") && n.Add(1) >= at {
				return errorfs.ErrInjected
			}
			return nil
		})
		fs := errorfs.Wrap(mem, inj)
		db, err := Create(fs, "/d", CreateOptions{Shards: 2, SegmentSize: 2 << 10})
		if err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		w := newWorkload(2)
		var batches [][]ShardOp
		acked := 0
		for range 30 {
			ops := w.batch(t, 4)
			batches = append(batches, ops)
			err := db.Commit(ops)
			if err == nil && rapid.IntRange(0, 4).Draw(t, "checkpoint") == 0 {
				err = db.Checkpoint()
			}
			if err != nil {
				if db.Commit(w.batch(t, 1)) == nil {
					t.Fatal("a commit after a failed log write succeeded")
				}
				break
			}
			acked++
		}
		_ = db.Close()
		armed.Store(false)
		rdb, _, err := Open(mem, "/d", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("Open after a failed log write: %v", err)
		}
		defer rdb.Close()
		var got, total uint64
		for _, s := range rdb.Shards {
			got += s.LSN
		}
		k := -1
		for j := 0; j <= len(batches); j++ {
			if total == got {
				k = j
				break
			}
			if j < len(batches) {
				total += uint64(len(batches[j]))
			}
		}
		if k < acked || k > acked+1 {
			t.Fatalf("recovered %d commits, %d were acknowledged", k, acked)
		}
		checkShardsEqual(t, "recovered after a failed log write", rdb.Shards, replayModel(t, 2, batches, k))
	})
}

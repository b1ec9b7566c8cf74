package journal

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
	"pgregory.net/rapid"
)

// runWorkload creates a directory, commits random batches, checkpoints at
// random points and returns the live DB (still open) and the model.
func runWorkload(t *rapid.T, fs vfs.FS, dir string, shards, batches int) (*DB, *workload) {
	db, err := Create(fs, dir, CreateOptions{Shards: shards, Now: 100})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	w := newWorkload(shards)
	for range batches {
		ops := w.batch(t, 6)
		if err := db.Commit(ops); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		db.SetNow(w.time)
		if rapid.IntRange(0, 9).Draw(t, "checkpoint") == 0 {
			if err := db.Checkpoint(); err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
		}
	}
	checkShardsEqual(t, "live state vs model", db.Shards, w.model)
	return db, w
}

// TestRecoveryEqualsLiveState: commit a random workload, checkpoint at
// random points, close without a checkpoint (the log tail stays) and
// reopen: every shard recovers to the model's state, with the replayed
// entries counted; a second reopen after a checkpoint replays nothing.
func TestRecoveryEqualsLiveState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		shards := rapid.IntRange(1, 4).Draw(t, "shards")
		db, w := runWorkload(t, fs, "/d", shards, rapid.IntRange(0, 60).Draw(t, "batches"))
		var tail int
		for i := range db.Shards {
			tail += int(db.Shards[i].LSN - db.headers[i].LSN)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// One shard at a time, as reshard reads.
		for i := range shards {
			s, _, sr, err := RecoverShard(fs, "/d", i, shards)
			if err != nil {
				t.Fatalf("RecoverShard(%d): %v", i, err)
			}
			if d := model.DiffShards(s, w.model[i]); d != "" {
				t.Fatalf("RecoverShard(%d) differs from the model:\n%s", i, d)
			}
			if sr.LSN != s.LSN || sr.CheckpointLSN+uint64(sr.Replayed) != s.LSN {
				t.Fatalf("RecoverShard(%d) report %+v, shard at LSN %d", i, sr, s.LSN)
			}
		}
		db, rep, err := Open(fs, "/d", OpenOptions{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		checkShardsEqual(t, "recovered vs model", db.Shards, w.model)
		replayed := 0
		for _, sr := range rep.Shards {
			replayed += sr.Replayed
		}
		if replayed != tail || rep.TornTail != "" {
			t.Fatalf("replayed %d entries (torn %q), want the %d after the checkpoints", replayed, rep.TornTail, tail)
		}
		// Continue the log after recovery, checkpoint, reopen.
		ops := w.batch(t, 6)
		if err := db.Commit(ops); err != nil {
			t.Fatalf("Commit after recovery: %v", err)
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatalf("Checkpoint after recovery: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, rep, err = Open(fs, "/d", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("Open after checkpoint: %v", err)
		}
		defer db.Close()
		checkShardsEqual(t, "recovered after checkpoint vs model", db.Shards, w.model)
		for _, sr := range rep.Shards {
			if sr.Replayed != 0 {
				t.Fatalf("shard %d replayed %d entries after a checkpoint of everything", sr.Shard, sr.Replayed)
			}
		}
	})
}

func TestCreateRefusesExistingAndLocks(t *testing.T) {
	dir := t.TempDir()
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: true}); !errors.Is(err, meta.ErrInUse) {
		t.Fatalf("Open of a directory open elsewhere: %v, want meta.ErrInUse", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(vfs.Default, dir, CreateOptions{Shards: 3}); err == nil {
		t.Fatal("Create over an existing data directory succeeded")
	}
	db, _, err = Open(vfs.Default, dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Meta(); got.Shards != 3 || got.Log != meta.LogShared || got.Format != meta.FormatLocal {
		t.Fatalf("meta %+v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCreateLogID: the same log ID and the same commits write the same
// log bytes; without one each directory gets a random ID, which chains
// into every batch checksum.
func TestCreateLogID(t *testing.T) {
	mem := vfs.NewMem()
	logBytes := func(dir string, id uint64) string {
		t.Helper()
		db, err := Create(mem, dir, CreateOptions{Shards: 2, LogID: id, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		ops := []ShardOp{{Shard: 1, Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1, Time: 3}}}}
		if err := db.Commit(ops); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		walDir := mem.PathJoin(dir, "wal")
		names, err := mem.List(walDir)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		var all []byte
		for _, name := range names {
			f, err := mem.Open(mem.PathJoin(walDir, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			all = append(append(all, name...), b...)
		}
		return string(all)
	}
	if a, b := logBytes("/a", 42), logBytes("/b", 42); a != b {
		t.Errorf("log ID 42 twice: the logs differ")
	}
	if a, b := logBytes("/c", 0), logBytes("/d", 0); a == b {
		t.Errorf("no log ID twice: the logs are the same; want random log IDs")
	}
	if a, b := logBytes("/e", 42), logBytes("/f", 43); a == b {
		t.Errorf("log IDs 42 and 43: the logs are the same")
	}
}

// TestCloseLeavesNoStoreLog: a read-write DB closed after commits and a
// checkpoint leaves no pebble log with anything in it in its stores
// (everything flushed to sstables), and reopens to the same state.
func TestCloseLeavesNoStoreLog(t *testing.T) {
	dir := t.TempDir()
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 2, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := model.Record{Kind: model.KindStart, WorkflowID: "wf", Type: "t", Gen: 1, Time: 5}
	if err := db.Commit([]ShardOp{{Shard: model.ShardOf("wf", 2), Op: model.Op{Kind: model.OpStart, Run: 1, Rec: rec}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		names, err := os.ReadDir(store.StoreDir(vfs.Default, dir, i))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if info, err := n.Info(); err == nil && strings.HasSuffix(n.Name(), ".log") && info.Size() > 64 {
				t.Errorf("shard %d: pebble log %s has %d bytes after Close", i, n.Name(), info.Size())
			}
		}
	}
	db2, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if r := db2.Shards[model.ShardOf("wf", 2)].Latest("wf"); r == nil || r.Type != "t" {
		t.Fatalf("reopened: run %+v", r)
	}
}

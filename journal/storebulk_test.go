package journal

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"pgregory.net/rapid"
)

// TestWriteShardStoreRecovers builds shards from a random workload (some
// runs marked renumbered, as reshard leaves them), writes a new directory
// from them with CreateFrom (WriteShardStore per shard) and reopens it: it
// recovers to the same shards, and a store written by WriteShardStore
// holds exactly the keys a checkpoint-built store holds.
func TestWriteShardStoreRecovers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3).Draw(t, "shards")
		w := newWorkload(n)
		for range rapid.IntRange(0, 120).Draw(t, "ops") {
			w.op(t)
		}
		for _, s := range w.model {
			s.LSN = 0 // a new directory starts a new log
			for _, r := range s.Runs {
				r.Renumbered = rapid.IntRange(0, 4).Draw(t, "renumbered") == 0
			}
		}
		mem := vfs.NewMem()
		db, err := CreateFrom(mem, "/d", w.model, CreateOptions{Now: 42})
		if err != nil {
			t.Fatalf("CreateFrom: %v", err)
		}
		checkShardsEqual(t, "created from shards", db.Shards, w.model)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, rep, err := Open(mem, "/d", OpenOptions{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		checkShardsEqual(t, "reopened", db.Shards, w.model)
		if db.Now != 42 || rep.TornTail != "" {
			t.Fatalf("now %d, torn %q", db.Now, rep.TornTail)
		}
		// The bulk store and the incremental one agree key for key: write
		// every run as changed into a checkpoint of an empty store.
		for i, s := range db.Shards {
			bulk := storeDump(t, db, i)
			inc := incrementalDump(t, mem, s, db.headers[i])
			if bulk != inc {
				t.Fatalf("shard %d: bulk store and checkpoint-built store differ:\n%s\nvs\n%s", i, bulk, inc)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func storeDump(t *rapid.T, db *DB, shard int) string {
	var out string
	err := db.StoreKeys(shard, func(k, v []byte) error {
		out += fmt.Sprintf("%q=%x\n", k, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// incrementalDump writes s into an empty store the way checkpoints do,
// every key marked changed, and dumps it.
func incrementalDump(t *rapid.T, fs vfs.FS, s *model.Shard, hdr model.CheckpointHeader) string {
	path := fmt.Sprintf("/inc-%d", s.Index)
	st, err := store.OpenStore(fs, path, nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	saved := s.Changed
	markAllChanged(s)
	b := st.NewBatch()
	if err := store.WriteChanges(b, nil, s, &hdr); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Changed = saved
	var out string
	it, _ := st.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		out += fmt.Sprintf("%q=%x\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// markAllChanged makes every key of s count as changed since the last
// checkpoint.
func markAllChanged(s *model.Shard) {
	s.TrackChanges()
	c := s.Changed
	for no := range s.Runs {
		c.Runs[no] = 0
	}
	for id := range s.ByID {
		c.IDs[id] = struct{}{}
	}
	for k := range s.Timers {
		c.Timers[k] = struct{}{}
	}
	for _, m := range s.Outbox {
		c.Outbox[m.Seq] = m.ID
	}
	for id := range s.Seen {
		c.Seen[id] = struct{}{}
	}
	for no := range s.Archive {
		c.Archive[no] = struct{}{}
	}
}

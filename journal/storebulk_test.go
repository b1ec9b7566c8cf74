package journal

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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

// TestCheckpointBatchIsDeterministic: a checkpoint of one state is the
// same batch, byte for byte, every time (keys in a fixed order, not map
// order), so the store's pebble log and the sequence numbers its tables
// hold depend only on the history: what makes gen byte-reproducible.
func TestCheckpointBatchIsDeterministic(t *testing.T) {
	s := benchShard(t, 300)
	markAllChanged(s)
	if n := s.PendingChanges(); n < 1000 {
		t.Fatalf("only %d changed keys: the test needs many to catch map order", n)
	}
	st, err := store.OpenStore(vfs.NewMem(), "/s", nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hdr := store.HeaderFor(s, model.CheckpointHeader{Now: 7, Created: 1, Gen: 1, Seq: 1})
	var first []byte
	for i := range 5 {
		b := st.NewBatch()
		if err := store.WriteChanges(b, nil, s, &hdr); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = append([]byte(nil), b.Repr()...)
		} else if !bytes.Equal(b.Repr(), first) {
			t.Fatalf("checkpoint batch %d differs from the first (%d vs %d bytes)", i, len(b.Repr()), len(first))
		}
		b.Close()
	}
}

// benchShard builds a shard of runs runs in memory: each started, given
// steps with payloads, a timer, a signal and a child; a third finished,
// half the rest parked.
func benchShard(tb testing.TB, runs int) *model.Shard {
	s := model.NewShard(0, 1)
	payload := make([]byte, 64)
	apply := func(op model.Op) {
		if err := s.Apply(&op); err != nil {
			tb.Fatal(err)
		}
	}
	for i := 1; i <= runs; i++ {
		no := model.RunNo(i)
		id := fmt.Sprintf("order-%08d", i)
		apply(model.Op{Kind: model.OpStart, Run: no, Rec: model.Record{Kind: model.KindStart, WorkflowID: id, Type: "order", Gen: 1, Time: int64(i), Payload: payload}})
		pos := uint32(1)
		rec := func(r model.Record) {
			r.Pos = pos
			pos++
			apply(model.Op{Kind: model.OpAppend, Run: no, Rec: r})
		}
		for range 4 {
			rec(model.Record{Kind: model.KindStep, Name: "charge", Status: model.StatusOK, Attempt: 1, Payload: payload, Key: model.CtxKey{WorkflowID: id, Run: no, Pos: pos}})
		}
		rec(model.Record{Kind: model.KindTimer, Name: "sleep", Time: int64(i) + 60_000})
		rec(model.Record{Kind: model.KindSignal, Name: "go", MsgID: id + "/s", Payload: payload})
		rec(model.Record{Kind: model.KindChild, WorkflowID: id + "-child", Type: "ship", MsgID: id + "/c", Payload: payload})
		switch i % 3 {
		case 0:
			rec(model.Record{Kind: model.KindDone, Status: model.StatusOK, Time: int64(i) + 10, Payload: payload})
		case 1:
			apply(model.Op{Kind: model.OpPark, Run: no})
		}
		apply(model.Op{Kind: model.OpSeen, MsgID: fmt.Sprintf("in/%d", i), WorkflowID: fmt.Sprintf("wf-%d", i%7)})
	}
	return s
}

// storeBytes is the size of the keys and values of s's store.
func storeBytes(s *model.Shard) int64 {
	var n int64
	hdr := store.HeaderFor(s, model.CheckpointHeader{})
	_ = store.EachStoreKey(s, &hdr, func(k, v []byte) error {
		n += int64(len(k) + len(v))
		return nil
	})
	return n
}

// BenchmarkWriteShardStore compares building a shard's store from scratch
// with WriteShardStore (sorted sstables, ingested) against one synced
// pebble batch of the same keys, on the real disk.
func BenchmarkWriteShardStore(b *testing.B) {
	const runs = 50_000
	s := benchShard(b, runs)
	size := storeBytes(s)
	report := func(b *testing.B, start time.Time) {
		sec := time.Since(start).Seconds()
		b.ReportMetric(float64(runs)*float64(b.N)/sec, "runs/s")
	}
	b.Run("ingest", func(b *testing.B) {
		b.SetBytes(size)
		dir := b.TempDir()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := store.WriteShardStore(vfs.Default, filepath.Join(dir, fmt.Sprint(i)), s, model.CheckpointHeader{Gen: 1}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	// A synced batch leaves the keys in pebble's log and memtable; with
	// flush they are in sstables too, as after ingest.
	for _, flush := range []bool{false, true} {
		name := "batch"
		if flush {
			name = "batch+flush"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			dir := b.TempDir()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				st, err := store.OpenStore(vfs.Default, filepath.Join(dir, fmt.Sprint(i)), nil, false, true)
				if err != nil {
					b.Fatal(err)
				}
				bt := st.NewBatch()
				hdr := store.HeaderFor(s, model.CheckpointHeader{Gen: 1})
				if err := store.EachStoreKey(s, &hdr, func(k, v []byte) error { return bt.Set(k, v, nil) }); err != nil {
					b.Fatal(err)
				}
				if err := bt.Commit(pebble.Sync); err != nil {
					b.Fatal(err)
				}
				if flush {
					if err := st.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, start)
		})
	}
}

package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// WriteShardStore refuses a header generation other than the shard's, and
// a shard without one.
func TestWriteShardStoreRefusesOtherGen(t *testing.T) {
	s := model.NewShard(0, 1)
	if err := WriteShardStore(vfs.NewMem(), "/s", s, model.CheckpointHeader{Gen: 2}); err == nil {
		t.Error("a header gen other than the shard's StoreGen was accepted")
	}
	s.StoreGen = 0
	if err := WriteShardStore(vfs.NewMem(), "/s", s, model.CheckpointHeader{}); err == nil {
		t.Error("a shard of store generation 0 was accepted")
	}
}

// TestCheckpointBatchIsDeterministic: a checkpoint of one state is the
// same batch, byte for byte, every time (keys in a fixed order, not map
// order), so the store's pebble log and the sequence numbers its tables
// hold depend only on the history: what makes gen byte-reproducible.
func TestCheckpointBatchIsDeterministic(t *testing.T) {
	s := benchShard(t, 300)
	if n := s.PendingChanges(); n < 1000 {
		t.Fatalf("only %d changed keys: the test needs many to catch map order", n)
	}
	st, err := OpenStore(vfs.NewMem(), "/s", nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hdr := HeaderFor(s, model.CheckpointHeader{Now: 7, Created: 1, Gen: 1, Seq: 1})
	var first []byte
	for i := range 5 {
		b := st.NewBatch()
		if err := WriteChanges(b, nil, s, &hdr); err != nil {
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
// half the rest parked. Its changes are tracked from the start, so every
// key counts as changed, as before a shard's first checkpoint.
func benchShard(tb testing.TB, runs int) *model.Shard {
	s := model.NewShard(0, 1)
	s.TrackChanges()
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

// storeBytes is the size of the keys and values of s's
func storeBytes(s *model.Shard) int64 {
	var n int64
	hdr := HeaderFor(s, model.CheckpointHeader{})
	_ = EachStoreKey(s, &hdr, func(k, v []byte) error {
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
			if err := WriteShardStore(vfs.Default, filepath.Join(dir, fmt.Sprint(i)), s, model.CheckpointHeader{Gen: 1}); err != nil {
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
				st, err := OpenStore(vfs.Default, filepath.Join(dir, fmt.Sprint(i)), nil, false, true)
				if err != nil {
					b.Fatal(err)
				}
				bt := st.NewBatch()
				hdr := HeaderFor(s, model.CheckpointHeader{Gen: 1})
				if err := EachStoreKey(s, &hdr, func(k, v []byte) error { return bt.Set(k, v, nil) }); err != nil {
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

package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// writeManyRuns makes a one-shard directory on the real disk whose store
// holds n finished runs of four records each (written key by key, so that
// the test itself never holds the shard), then commits a small tail
// touching some of them without a checkpoint.
func writeManyRuns(t *testing.T, dir string, n int) {
	t.Helper()
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 1, Now: 100})
	must(t, err)
	must(t, db.Close())
	path := store.StoreDir(vfs.Default, dir, 0)
	st, err := store.OpenStore(vfs.Default, path, nil, false, false)
	must(t, err)
	val, closer, err := st.Get(store.HeaderKey())
	must(t, err)
	hdr, err := model.DecodeHeader(val)
	must(t, err)
	closer.Close()
	payload := make([]byte, 200)
	b := st.NewBatch()
	var buf []byte
	for no := model.RunNo(1); no <= model.RunNo(n); no++ {
		id := fmt.Sprintf("wf-%08d", no)
		recs := []model.Record{
			{Kind: model.KindStart, WorkflowID: id, Type: "order", Gen: 1, Time: 10, Payload: payload},
			{Kind: model.KindStep, Pos: 1, Name: "charge", Status: model.StatusOK, Attempt: 1, Payload: payload},
			{Kind: model.KindValue, Pos: 2, Name: "random", Time: 20, Payload: payload},
			{Kind: model.KindDone, Pos: 3, Status: model.StatusOK, Time: 30, Payload: payload},
		}
		r := model.Run{No: no, WorkflowID: id, Gen: 1, Type: "order", State: model.StateFinished, Status: model.StatusOK, Started: 10, Finished: 30, Journal: recs}
		e := model.EntryOf(&r)
		must(t, b.Set(store.RunKey(no), model.EncodeRunEntry(buf[:0], &e), nil))
		for i := range recs {
			must(t, b.Set(store.RecordKey(no, uint32(i)), model.EncodeRecord(buf[:0], &recs[i]), nil))
		}
		must(t, b.Set(store.IndexKey(id), model.EncodeRunNo(no), nil))
		if no%2000 == 0 || no == model.RunNo(n) {
			must(t, b.Commit(pebble.NoSync))
			b.Close()
			b = st.NewBatch()
		}
	}
	hdr.NextRun = model.RunNo(n) + 1
	must(t, b.Set(store.HeaderKey(), model.EncodeHeader(nil, &hdr), nil))
	must(t, b.Commit(pebble.Sync))
	b.Close()
	must(t, st.Close())

	// A tail: tombstone a few stored runs, start a few new ones.
	db, _, err = Open(vfs.Default, dir, OpenOptions{})
	must(t, err)
	var ops []ShardOp
	for no := model.RunNo(1); no <= model.RunNo(n); no += model.RunNo(n / 10) {
		ops = append(ops, ShardOp{Op: model.Op{Kind: model.OpTombstone, Run: no}})
	}
	for i := range 10 {
		ops = append(ops, ShardOp{Op: model.Op{Kind: model.OpStart, Run: model.RunNo(n + 1 + i),
			Rec: model.Record{Kind: model.KindStart, WorkflowID: fmt.Sprintf("new-%d", i), Gen: 1, Type: "order"}}})
	}
	must(t, db.Commit(ops))
	must(t, db.Close())
}

// streamPeakHeap streams every run of the directory's one shard and
// returns the run count and the largest HeapInuse seen during the stream
// above the heap in use before it.
func streamPeakHeap(t *testing.T, dir string) (int, uint64) {
	t.Helper()
	_, tails, _ := readAllTails(t, vfs.Default, dir, 1)
	sr, err := store.OpenShardReader(vfs.Default, dir, 0, 1, &tails[0])
	must(t, err)
	defer sr.Close()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	runs := 0
	err = sr.Runs(context.Background(), func(r *model.Run, archive []model.Record) error {
		runs++
		if runs%500 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
		return nil
	})
	must(t, err)
	return runs, peak - base
}

// recoverHeap is the heap in use that RecoverShard's whole shard takes,
// for comparison.
func recoverHeap(t *testing.T, dir string) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	s, _, _, err := RecoverShard(vfs.Default, dir, 0, 1)
	must(t, err)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(s)
	return ms.HeapInuse - base
}

// TestShardReaderMemoryFlat streams a shard of 10,000 and one of 40,000
// runs (20,000 and 100,000 with FUSEE_LONG=1; each run about 1 KB of
// journal): the heap in use while streaming does not grow with the shard.
// Loading the larger shard whole takes about 2.4 KB a run (96 MiB at
// 40,000); the bound here is generous so that GC timing cannot fail it,
// and the test checks that the whole shard is well past that bound (or a
// reader that loaded it could pass).
func TestShardReaderMemoryFlat(t *testing.T) {
	if testtier.Race {
		t.Skip("a heap measurement, minutes under -race; .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("writes two stores of 10k and 40k runs")
	}
	sizes := []int{10_000, 40_000}
	if testtier.Long() {
		sizes = []int{20_000, 100_000}
	}
	const slack = 32 << 20
	var growth [2]uint64
	for i, n := range sizes {
		dir := filepath.Join(t.TempDir(), "d")
		writeManyRuns(t, dir, n)
		runs, g := streamPeakHeap(t, dir)
		if runs != n+10 {
			t.Fatalf("streamed %d runs, want %d", runs, n+10)
		}
		growth[i] = g
		t.Logf("%d runs: peak heap in use while streaming: %.1f MiB above the start", runs, float64(g)/(1<<20))
		if i == 1 {
			whole := recoverHeap(t, dir)
			t.Logf("%d runs: RecoverShard's shard holds %.1f MiB", runs, float64(whole)/(1<<20))
			if whole < 2*slack {
				t.Fatalf("the whole shard of %d runs holds only %d bytes: too small for a bound of %d bytes to tell streaming from loading", runs, whole, slack)
			}
		}
	}
	if growth[1] > growth[0]+slack {
		t.Fatalf("streaming %d runs grew the heap by %d bytes, %d runs by %d: memory follows the data", sizes[1], growth[1], sizes[0], growth[0])
	}
}

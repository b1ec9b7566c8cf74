package reshard_test

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/reshard"
)

// reshardPeakHeap reshards dir to n shards and returns the largest heap
// (runtime/metrics: live and unswept objects) sampled meanwhile, above
// the heap before (peakHeapDuring says why the collector runs often
// meanwhile: at the default GOGC the same 6,000-run 4->3 reshard peaked
// anywhere from 11 to 18 MiB, and a change that only made less garbage
// moved it past the bound).
func reshardPeakHeap(t *testing.T, dir string, n int, opts reshard.Options) uint64 {
	t.Helper()
	return peakHeapDuring(time.Millisecond, func() { doReshard(t, dir, n, opts) })
}

// peakHeapDuring runs fn and returns the largest heap (live and unswept
// objects) sampled every interval meanwhile, above the heap before. The
// collector runs at 10% growth meanwhile, so that what is sampled follows
// the live heap: at the default 100%, the garbage between two collections
// is as large as the live heap and how much of it a sample catches
// depends on timing, and that noise was as large as the growth tested for.
func peakHeapDuring(every time.Duration, fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return max(peak.Load(), base) - base
}

// TestReshardStaysFlat: the same reshard (4 -> 3 shards, renumbering, and
// 4 -> 8, the direct grow) of directories of 600 and 6,000 runs, with
// a budget small enough that both spill their maps: the peak heap
// of the larger is within a small factor of the smaller's, not ten times
// it.
func TestReshardStaysFlat(t *testing.T) {
	if testtier.Race {
		t.Skip("a heap measurement (pebble's block cache is Go heap under -race); .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("generates directories of 600 and 6,000 runs")
	}
	sizes := []int{600, 6000}
	srcs := make([]string, len(sizes))
	for k, runs := range sizes {
		srcs[k] = genDir(t, 4, runs, 7)
	}
	for _, newN := range []int{3, 8} {
		var peaks []uint64
		for _, src := range srcs {
			dir := filepath.Join(t.TempDir(), "d")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			peaks = append(peaks, reshardPeakHeap(t, dir, newN, reshard.Options{Memory: 32 << 10}))
		}
		small, large := peaks[0], peaks[1]
		t.Logf("4->%d: peak heap %.1f MiB at %d runs, %.1f MiB at %d runs", newN,
			float64(small)/(1<<20), sizes[0], float64(large)/(1<<20), sizes[1])
		// Ten times the runs; twice the heap (and a few MiB for the
		// stores' caches and the report's lists) leaves room for GC timing.
		if large > small*2+4<<20 {
			t.Errorf("4->%d: peak heap grew from %d to %d bytes with ten times the runs", newN, small, large)
		}
	}
}

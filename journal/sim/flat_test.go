package sim

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
)

// peakLiveHeap runs f and returns the largest live heap (the heap marked
// live by a GC, runtime/metrics /gc/heap/live:bytes) seen while it ran,
// sampled every millisecond.
func peakLiveHeap(f func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var max uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > max {
				max = v
			}
			select {
			case <-stop:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	return <-peak
}

// TestGenFlatMemory: gen's live heap does not grow with the run count.
// The same workload at two sizes ten times apart, with the engine's
// memory bounds lowered so that both sizes are past them (a checkpoint
// that evicts every run once 300 are resident, event queues that spill
// past 1000 events), peaks within a small factor: without eviction and
// spilling the larger one holds ten times the runs and events.
func TestGenFlatMemory(t *testing.T) {
	if testtier.Race {
		t.Skip("under -race pebble's block cache is Go heap and fills with the directory; .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("generates 11,000 runs")
	}
	gen := func(runs int) uint64 {
		o := GenOptions{Runs: runs, Seed: 9, Shards: 4, spillAt: 1000, Config: Config{MaxResident: 300}}
		dir := filepath.Join(t.TempDir(), "data")
		return peakLiveHeap(func() {
			if _, err := Generate(context.Background(), vfs.Default, dir, o); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := gen(1000), gen(10000)
	t.Logf("peak live heap: %d KiB at 1000 runs, %d KiB at 10000 runs (x%.2f)", small>>10, large>>10, float64(large)/float64(small))
	if float64(large) > 2*float64(small) {
		t.Fatalf("peak live heap grew x%.2f for 10x the runs (%d -> %d KiB): gen's memory is not flat",
			float64(large)/float64(small), small>>10, large>>10)
	}
}

// TestDriveFlatMemory: sim drive's live heap does not grow with the run
// count. Drive opens with an evicting recovery (no run loaded; the log
// tail's runs read back) and rebuilds its pending events from the stores
// one run at a time; then it evicts at each checkpoint like gen. The same
// workload at two sizes ten times apart, driven with the engine's bounds
// lowered so that both are past them, peaks within a factor of 3; a
// drive that recovered the whole directory into memory holds ten times
// the runs at the larger size.
func TestDriveFlatMemory(t *testing.T) {
	if testtier.Race {
		t.Skip("under -race pebble's block cache is Go heap and fills with the directory; .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("generates and drives 11,000 runs")
	}
	cfg := Config{MaxResident: 300}
	drive := func(runs int) uint64 {
		dir := filepath.Join(t.TempDir(), "data")
		if _, err := Generate(context.Background(), vfs.Default, dir, GenOptions{Runs: runs, Seed: 9, Shards: 4, spillAt: 1000, Config: cfg}); err != nil {
			t.Fatal(err)
		}
		return peakLiveHeap(func() {
			if _, err := Drive(context.Background(), vfs.Default, dir, DriveOptions{NoSync: true, spillAt: 1000, Config: cfg}); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := drive(1000), drive(10000)
	t.Logf("peak live heap: %d KiB at 1000 runs, %d KiB at 10000 runs (x%.2f)", small>>10, large>>10, float64(large)/float64(small))
	if float64(large) > 3*float64(small) { // measured x1.9; recovering everything: x5.9
		t.Fatalf("peak live heap grew x%.2f for 10x the runs (%d -> %d KiB): sim drive's memory is not flat",
			float64(large)/float64(small), small>>10, large>>10)
	}
}

package cli

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/journal"
)

// TestGenLimitFollowsLiveHeap: gen's heap limit stays genHeapLimit for a
// small live heap and follows a live heap that has grown past four
// fifths of it, so that the collector never runs without pause.
func TestGenLimitFollowsLiveHeap(t *testing.T) {
	if got := genLimitFor(genHeapLimit, 1<<20); got != genHeapLimit {
		t.Errorf("genLimitFor(1 MiB) = %d, want genHeapLimit %d", got, int64(genHeapLimit))
	}
	if got, want := genLimitFor(genHeapLimit, 2*genHeapLimit), int64(2*genHeapLimit+genHeapLimit/2); got != want {
		t.Errorf("genLimitFor(2 x genHeapLimit) = %d, want %d", got, want)
	}
	// The base is the small limit up to journal.LargeBuildRuns runs, the
	// large one past it.
	if got := genBaseLimit(journal.LargeBuildRuns); got != genHeapLimit {
		t.Errorf("genBaseLimit(%d runs) = %d, want %d", journal.LargeBuildRuns, got, int64(genHeapLimit))
	}
	if got := genBaseLimit(journal.LargeBuildRuns + 1); got != largeGenHeapLimit {
		t.Errorf("genBaseLimit(%d runs) = %d, want %d", journal.LargeBuildRuns+1, got, int64(largeGenHeapLimit))
	}
	prev := debug.SetMemoryLimit(genHeapLimit)
	defer debug.SetMemoryLimit(prev)
	live := make([]byte, genHeapLimit) // a live heap past the limit (allocated is live: no need to touch it)
	runtime.GC()
	stop := followLiveHeap(genHeapLimit)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) <= genHeapLimit {
		if time.Now().After(deadline) {
			t.Fatalf("with %d MiB live the limit stayed at %d MiB", len(live)>>20, debug.SetMemoryLimit(-1)>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

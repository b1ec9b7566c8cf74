package cli

import (
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestArenasCapped: with glibc, threads that each malloc get at most one
// arena a core between them (the constructor in malloc_cgo.go), where
// glibc alone gives each of up to eight a core an arena of its own.
func TestArenasCapped(t *testing.T) {
	if !mallocIsGlibc() {
		t.Skip("not a cgo build with glibc: fusee leaves the C allocator as it is")
	}
	if os.Getenv("MALLOC_ARENA_MAX") != "" {
		t.Skip("MALLOC_ARENA_MAX is set: the constructor leaves the cap to it")
	}
	// The cap is one arena a core the process may run on, which is what
	// NumCPU counts too (both read the affinity).
	if c := arenaCap(); c != runtime.NumCPU() {
		t.Fatalf("the constructor capped the arenas at %d, want %d (runtime.NumCPU)", c, runtime.NumCPU())
	}
	threads := 4*runtime.NumCPU() + 4
	var start, done sync.WaitGroup
	start.Add(threads)
	done.Add(threads)
	for range threads {
		go func() {
			runtime.LockOSThread() // a thread of its own, never handed back
			start.Done()
			start.Wait() // all threads exist at once
			touchMalloc()
			done.Done()
			select {} // keep the thread
		}()
	}
	done.Wait()
	if n := mallocArenas(); n < 1 || n > runtime.NumCPU() {
		t.Fatalf("%d threads made %d malloc arenas, want 1 to %d (one a core)", threads, n, runtime.NumCPU())
	}
}

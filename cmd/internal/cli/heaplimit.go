package cli

import "runtime/debug"

// lowerHeapLimit sets the Go runtime's soft memory limit to limit while a
// command runs, unless a lower one is already in force (GOMEMLIMIT), and
// returns what restores the previous limit. The limit is process-wide, so
// the commands set it, never the packages they call (tests run many
// reshards in one process). Without one the garbage collector lets the
// heap grow to about twice what is live, and the peak RSS with it.
func lowerHeapLimit(limit int64) (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	if prev <= limit {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

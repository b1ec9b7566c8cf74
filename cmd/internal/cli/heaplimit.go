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

// reshardHeapLimit is the soft memory limit while reshard or upgrade
// rebuilds shards with a memory budget (at least 64 MiB). Built with cgo,
// pebble keeps its block caches and memtables in C memory, which the Go
// runtime does not count: the limit is then five eighths of the budget,
// the Go heap's share (the run map, the sort's arena, the readers'
// buffers), and the other three eighths are pebble's. Built without cgo,
// as the releases are, pebble allocates them on the Go heap, and the limit
// must hold them too: three quarters of the budget. At five eighths the
// live heap of a 10M-run reshard (about 140 MB) sat at the collector's
// goal and it collected 27,098 times in 161 s.
func reshardHeapLimit(budget int64) int64 {
	if pebbleMemoryInGoHeap {
		return max(budget/4*3, 64<<20)
	}
	return max(budget/8*5, 64<<20)
}

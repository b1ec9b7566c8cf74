package reshard

import "runtime/debug"

// limitHeap (Options.LimitHeap) sets the Go runtime's soft memory limit
// to five eighths of the budget (at least 64 MiB) while a reshard runs,
// and returns what restores the previous limit; a lower limit already set
// (GOMEMLIMIT) stays. Without it the garbage collector lets the heap grow
// to twice what is live (the run map, the sort's arena, the readers'
// buffers), and the peak RSS with it; the other three eighths are for
// what the Go runtime does not count, pebble's caches and memtables among
// them.
func limitHeap(budget int64) (restore func()) {
	limit := max(budget/8*5, 64<<20)
	prev := debug.SetMemoryLimit(-1)
	if prev <= limit {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

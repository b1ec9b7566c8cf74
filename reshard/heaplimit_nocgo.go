//go:build !cgo

package reshard

// pebbleMemoryInGoHeap says whether pebble's caches and memtables are Go
// memory: they are without cgo (pebble's manual allocator falls back to
// make), so the soft limit must leave room for them.
const pebbleMemoryInGoHeap = true

//go:build cgo

package reshard

// pebbleMemoryInGoHeap says whether pebble's caches and memtables are Go
// memory: not with cgo, where pebble allocates them with C's allocator.
const pebbleMemoryInGoHeap = false

//go:build !cgo || !linux

package cli

// setMalloc does nothing without cgo: pebble's block cache and memtables
// are then on the Go heap, under the Go heap limit.
func setMalloc(cMalloc) int { return 0 }

// mallocIsGlibc is false: no C library is called.
func mallocIsGlibc() bool { return false }

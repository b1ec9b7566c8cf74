//go:build !cgo || !linux

package cli

// Without cgo pebble's block cache and memtables are on the Go heap and
// no C allocator is involved; elsewhere than Linux it is left as it is.

func mallocIsGlibc() bool { return false }
func touchMalloc()        {}
func mallocArenas() int   { return -1 }
func arenaCap() int       { return 0 }

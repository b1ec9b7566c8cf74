//go:build !cgo

package cli

// genHeapLimit is gen's soft limit on the Go heap (genGC) in a build
// without cgo, as the releases are: pebble's block cache and memtables
// (128 MiB at 8 shards) are then on the Go heap as well, so it stays at
// 256 MiB (bench/results/gen6.md), above the cgo build's.
const genHeapLimit = 256 << 20

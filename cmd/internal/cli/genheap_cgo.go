//go:build cgo

package cli

// genHeapLimit is gen's soft limit on the Go heap (genGC) in a cgo build,
// where pebble's block cache and memtables are C memory, outside it.
// Against 384 MiB, 256 took 109 MiB off gen's peak RSS for 5% more CPU
// (bench/results/gen6.md); 192 against 256 took about 60 MiB more off it
// for about 1% more CPU, where 160 cost 16% more CPU for 34 MiB less
// (1M runs, 8 shards; bench/results/gen7.md).
const genHeapLimit = 192 << 20

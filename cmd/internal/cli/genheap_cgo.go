//go:build cgo

package cli

// genHeapLimit is gen's soft limit on the Go heap (genGC) in a cgo build,
// where pebble's block cache and memtables are C memory, outside it.
// Against 384 MiB, 256 took 109 MiB off gen's peak RSS for 5% more CPU
// (bench/results/gen6.md). Against main's 256, 192 took the peak from
// 490 to 408 MiB (medians of five alternating pairs at 1M runs, 8
// shards); the CPU ratios were 0.93-1.21, median 1.005: the pairs at low
// load cost 13-21% more; three pairs on the idle machine after the
// merge, 0.974 (bench/results/1m-s16.md). 160 cost 16% more CPU than 192 for 34 MiB less
// (one pair). bench/results/gen7.md.
const genHeapLimit = 192 << 20

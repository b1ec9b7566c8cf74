//go:build !cgo

package cli

// genHeapLimit is gen's soft limit on the Go heap (genGC) in a build
// without cgo, as the releases are: pebble's block cache and memtables
// (80 MiB at 8 shards, journal's buildSizes.cacheTotal) are then on the Go heap
// as well, so it is above the cgo build's. At 1M runs, 8 shards: 208 MiB
// took 78 s of CPU and peaked at 284 MiB; 192 took 100 s (272 MiB), 176
// took 161 s (275 MiB: the collector ran without pause). Until session
// 18 the limit was 256 MiB with a 128 MiB cache, and gen took 145 s
// (376 MiB) in this build. bench/results/gen9.md. largeGenHeapLimit is
// the limit past journal.LargeBuildRuns runs, whose stores get 128 MiB
// of cache and memtables at 8 shards, as until session 18.
const (
	genHeapLimit      = 208 << 20
	largeGenHeapLimit = 256 << 20
)

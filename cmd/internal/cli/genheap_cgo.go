//go:build cgo

package cli

// genHeapLimit is gen's soft limit on the Go heap (genGC) in a cgo build,
// where pebble's block cache and memtables are C memory, outside it.
// History: 384 MiB, then 256 (bench/results/gen6.md), then 192 (gen7.md,
// 1m-s16.md). 112 MiB since session 18, with fewer resident runs and a
// smaller cache for the stores being built (journal's buildCacheSize,
// sim's MaxResident): gen's live heap is then 60-95 MB, and at 1M runs,
// 8 shards, the peak RSS went from 427 to 248 MiB for 16% more CPU
// (medians of four alternating pairs, bench/results/gen9.md).
// largeGenHeapLimit is the limit past journal.LargeBuildRuns runs, with
// the larger sizes those directories keep (session 17's 192 MiB).
const (
	genHeapLimit      = 112 << 20
	largeGenHeapLimit = 192 << 20
)

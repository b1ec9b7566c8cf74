//go:build race

package sim

// raceOn: under -race pebble allocates its block cache in the Go heap
// (so the race detector sees it), which a peak-heap measurement would
// count as the command's own memory.
const raceOn = true

//go:build race

package testtier

// Race reports whether the race detector is on. Under it everything runs
// several times slower, and pebble allocates its block cache in the Go heap
// (so the detector sees it), which a peak-heap measurement would count as
// the command's own memory.
const Race = true

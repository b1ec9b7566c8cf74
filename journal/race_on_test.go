//go:build race

package journal

// raceOn: under -race pebble allocates its block cache in the Go heap
// (so the race detector sees it), and everything runs several times
// slower; the heap measurements skip themselves and .ci/run runs them
// without -race.
const raceOn = true

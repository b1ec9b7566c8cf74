//go:build race

package sim

import "os"

// raceOn: under -race pebble allocates its block cache in the Go heap
// (so the race detector sees it), which a peak-heap measurement would
// count as the command's own memory.
const raceOn = true

// raceTrimmed reports whether TestOracle drives a third of its workloads
// (a different third each day): under -race in the README's test
// command; not with FUSEE_RACE_FULL=1 (CI runs them all so as well, see
// .ci/run) or FUSEE_LONG=1.
func raceTrimmed() bool {
	return os.Getenv("FUSEE_RACE_FULL") != "1" && !longTests()
}

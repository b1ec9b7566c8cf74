//go:build race

package check

import "os"

// raceOn: under -race pebble allocates its block cache in the Go heap
// (so the race detector sees it), which a peak-heap measurement would
// count as the command's own memory.
const raceOn = true

// raceTrimmed reports whether the property tests take a third of rapid's
// cases: under -race in the README's test command; not with
// FUSEE_RACE_FULL=1 (CI runs them so as well, see .ci/run) or FUSEE_LONG.
func raceTrimmed() bool {
	return os.Getenv("FUSEE_RACE_FULL") != "1" && os.Getenv("FUSEE_LONG") == ""
}

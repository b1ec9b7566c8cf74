//go:build race

package reshard_test

import "os"

// raceOn: the race detector slows everything several times; tests use
// smaller directories and the sweeps sample every raceStride-th step,
// from an offset that changes daily (sweepOffset), so that raceStride
// days of runs cover every step.
const raceOn = true

// raceStride is how sparsely the crash and fault sweeps sample steps
// under the race detector: every 24th step in the README's test command,
// every 8th with FUSEE_RACE_FULL=1 (CI runs the sweeps so as well, see
// .ci/run); FUSEE_LONG=1 takes every step. The kept-layout sweeps, which
// sample on strides of their own, scale them by raceStride/8 (raceScaled).
var raceStride = func() int {
	if os.Getenv("FUSEE_RACE_FULL") == "1" {
		return 8
	}
	return 24
}()

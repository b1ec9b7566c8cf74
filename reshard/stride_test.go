package reshard_test

import "github.com/fusee-dev/fusee/internal/testtier"

// raceStride is how sparsely the crash and fault sweeps sample steps: every
// step without the race detector and with FUSEE_LONG=1; under it, every
// 48th step in the README's test command (the quick tier) and every 8th
// with FUSEE_RACE_FULL=1 (CI runs the sweeps so as well, see .ci/run),
// from an offset that changes daily (testtier.Offset), so that raceStride
// days of runs cover every step. The kept-layout sweeps, which sample on
// strides of their own, scale them by raceStride/8 (raceScaled).
var raceStride = func() int {
	switch {
	case !testtier.Race || testtier.Long():
		return 1
	case testtier.Full():
		return 8
	}
	return 48
}()

//go:build race

package reshard_test

// raceOn: the race detector slows everything several times; tests use
// smaller directories and the sweeps sample every raceStride-th step,
// from an offset that changes daily (sweepOffset), so that eight days of
// runs cover every step.
const raceOn = true

// raceStride is how sparsely the crash and fault sweeps sample steps
// under the race detector (FUSEE_LONG=1 takes every step).
const raceStride = 8

//go:build race

package reshard_test

// raceOn: the race detector slows everything several times; tests use
// smaller directories and the sweeps sample every fourth step.
const raceOn = true

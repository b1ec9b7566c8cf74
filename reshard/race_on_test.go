//go:build race

package reshard_test

// raceOn: the race detector slows everything several times; the sweeps
// then sample (crash points and faults every fourth step).
const raceOn = true

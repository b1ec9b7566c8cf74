//go:build race

package reshard_test

// raceOn: the race detector slows these single-threaded tests five- to
// tenfold; they use smaller directories under it (the same code paths).
const raceOn = true

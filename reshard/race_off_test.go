//go:build !race

package reshard_test

const raceOn = false

// raceStride is not used without the race detector; see race_on_test.go.
const raceStride = 1

//go:build !race

package sim

const raceOn = false

// raceTrimmed: without the race detector TestOracle drives all its
// workloads; see race_on_test.go.
func raceTrimmed() bool { return false }

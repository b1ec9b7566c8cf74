//go:build !race

package check

const raceOn = false

// raceTrimmed: without the race detector the property tests take all of
// rapid's cases; see race_on_test.go.
func raceTrimmed() bool { return false }

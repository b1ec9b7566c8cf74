//go:build !race

package reshard_test

const raceOn = false

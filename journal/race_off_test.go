//go:build !race

package journal

const raceOn = false

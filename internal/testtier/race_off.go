//go:build !race

package testtier

// Race reports whether the race detector is on; see race_on.go.
const Race = false

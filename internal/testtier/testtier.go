// Package testtier says how much of its heavy work a test does, so that
// every test reads the same switches in one place.
//
// There are three tiers:
//
//   - quick: under the race detector without either variable below. This is
//     the README's test command (go test -race ./...), which a newcomer runs
//     and which must stay within its time on two cores: sweeps sample more
//     sparsely, oracles take fewer workloads, the largest fixtures are left
//     out. Every test still runs and can still fail.
//   - full: FUSEE_RACE_FULL=1 under -race, and every run without -race. CI
//     runs the race tier again with it (.ci/run), so nothing it ran before
//     the quick tier was made is left out of CI.
//   - long: FUSEE_LONG=1, the exhaustive sweeps (every step, the largest
//     sizes), run by hand.
//
// It is imported by tests only; production code must never import it.
package testtier

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"
)

// Long reports whether FUSEE_LONG=1 asks for the exhaustive sweeps.
func Long() bool { return os.Getenv("FUSEE_LONG") == "1" }

// Full reports whether tests run at the size CI runs them: always without
// the race detector, and under it with FUSEE_RACE_FULL=1 or FUSEE_LONG=1.
func Full() bool { return !Race || Long() || os.Getenv("FUSEE_RACE_FULL") == "1" }

// Quick reports whether this is the quick tier (the README's command).
func Quick() bool { return !Full() }

// Offset is where a sampled sweep (every stride-th case) starts, in
// [0, stride): the day of the year, so that runs on different days take
// different cases and stride days of runs cover them all;
// FUSEE_SWEEP_OFFSET=K repeats a run that failed (the test logs its
// offset). With stride 1 there is nothing to choose.
func Offset(t testing.TB, stride int) int {
	t.Helper()
	if stride <= 1 {
		return 0
	}
	off := time.Now().UTC().YearDay()
	if s := os.Getenv("FUSEE_SWEEP_OFFSET"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("FUSEE_SWEEP_OFFSET=%q: want a number from 0", s)
		}
		off = n
	}
	off %= stride
	t.Logf("sampling every %d-th case from offset %d (FUSEE_SWEEP_OFFSET=%d repeats it; FUSEE_RACE_FULL=1 or FUSEE_LONG=1 takes more)", stride, off, off)
	return off
}

// Pick is the cases of n that this run takes: all of them in the full
// tier, every stride-th from Offset in the quick one (at least one:
// with fewer than stride cases, one that changes daily).
func Pick(t testing.TB, n, stride int) []int {
	t.Helper()
	if Full() || stride <= 1 {
		stride = 1
	}
	if n <= 0 {
		return nil
	}
	return pick(n, stride, Offset(t, stride))
}

// pick is every stride-th of 0..n-1 from off (taken modulo n, so that
// fewer than stride cases still give one).
func pick(n, stride, off int) []int {
	var picked []int
	for i := off % n; i < n; i += stride {
		picked = append(picked, i)
	}
	return picked
}

// Subset is the elements of xs at the indexes Pick gives.
func Subset[T any](t testing.TB, xs []T, stride int) []T {
	t.Helper()
	var out []T
	for _, i := range Pick(t, len(xs), stride) {
		out = append(out, xs[i])
	}
	return out
}

// quickChecks is how many cases a rapid property test draws in the quick
// tier (rapid's default, the full tier's, is 100).
const quickChecks = 30

// Main runs a package's tests (call it from TestMain) after fitting rapid's
// property tests to the tier: quickChecks cases each in the quick tier.
// RAPID_CHECKS and -rapid.checks on the command line still win.
func Main(m *testing.M) {
	if _, set := os.LookupEnv("RAPID_CHECKS"); !set && Quick() {
		f := flag.Lookup("rapid.checks")
		if f != nil {
			_ = f.Value.Set(strconv.Itoa(quickChecks))
		}
	}
	os.Exit(m.Run())
}

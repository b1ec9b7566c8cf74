package reshard_test

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// sweepOffset is where a sampled sweep (every stride-th step) starts,
// in [0, stride): the day of the year by default, so that runs on
// different days cut at different steps and a week of runs covers them
// all; FUSEE_SWEEP_OFFSET=K repeats a run that failed (the test logs its
// offset). With stride 1 (FUSEE_LONG=1) there is nothing to choose.
func sweepOffset(t testing.TB, stride int) int {
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
	t.Logf("sampling every %d-th step from offset %d (FUSEE_SWEEP_OFFSET=%d repeats it; FUSEE_LONG=1 takes every step)", stride, off, off)
	return off
}

// The long crash and fault sweeps (TestCrashAtEveryStep,
// TestFaultAtEveryStep, TestUpgradeCrashAtEveryStep,
// TestUpgradeFaultAtEveryStep, TestKeptLayoutCrashAtEveryStep) call
// t.Parallel, so they share the machine's cores with each other once the
// package's other tests are done. Each works on memory filesystems of its
// own; none may set a package hook (reshard.SetTestHook,
// reshard.SetDirectWrite), which only sequential tests do, and reset.

// raceScaled is a kept-layout sweep's stride under the race detector:
// stride as CI runs it (FUSEE_RACE_FULL=1, raceStride 8), scaled with
// raceStride (three times sparser in the README's command), never below 1.
func raceScaled(stride int) int {
	return max(1, stride*raceStride/8)
}

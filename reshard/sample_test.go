package reshard_test

// The long crash and fault sweeps (TestCrashAtEveryStep,
// TestFaultAtEveryStep, TestUpgradeCrashAtEveryStep,
// TestUpgradeFaultAtEveryStep, TestKeptLayoutCrashAtEveryStep) call
// t.Parallel, so they share the machine's cores with each other once the
// package's other tests are done. Each works on memory filesystems of its
// own; none may set a package hook (reshard.SetTestHook,
// reshard.SetDirectWrite), which only sequential tests do, and reset.

// raceScaled is a kept-layout sweep's stride under the race detector:
// stride as CI runs it (FUSEE_RACE_FULL=1, raceStride 8), scaled with
// raceStride (six times sparser in the README's command, the quick tier), never below 1.
func raceScaled(stride int) int {
	return max(1, stride*raceStride/8)
}

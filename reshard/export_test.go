package reshard

// SetTestHook sets the switch-step hook for a test.
func SetTestHook(f func(step string) error) { testHook = f }

// SetDirectWrite turns the unsorted write of a grow to a multiple on or
// off, returning the previous setting.
func SetDirectWrite(on bool) bool { old := directWrite; directWrite = on; return old }

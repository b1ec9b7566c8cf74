package reshard

// SetTestHook sets the switch-step hook for a test.
func SetTestHook(f func(step string) error) { testHook = f }

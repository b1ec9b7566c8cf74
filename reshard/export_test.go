package reshard

// SetTestHook sets the switch-step hook for a test.
func SetTestHook(f func(step string) error) { testHook = f }

// SetDirectWrite turns the unsorted write of a grow to a multiple on or
// off, returning the previous setting.
func SetDirectWrite(on bool) bool { old := directWrite; directWrite = on; return old }

// SetReadBackCheck makes every reshard also read its new shards back and
// compare their digest with the one computed as they were written,
// returning the previous setting.
func SetReadBackCheck(on bool) bool { old := readBackCheck; readBackCheck = on; return old }

// SetCorruptWrite sets a function that may change or drop each value the
// rewrite hands to a new store (before the check and the writer), as a
// bug in the rewrite would: the check must catch it.
func SetCorruptWrite(f func(shard int, key, value []byte) ([]byte, bool)) { corruptWrite = f }

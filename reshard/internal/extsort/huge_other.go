//go:build !linux

package extsort

// adviseHuge does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHuge([]byte) {}

package extsort

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages for b's pages, those of the
// Go heap's array b begins (at a page boundary: an array this large has
// pages of its own). An error (a kernel without them) leaves b as it was.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

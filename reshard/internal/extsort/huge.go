package extsort

import "unsafe"

// hugeMin is the smallest array growHuge asks huge pages for: below two
// huge pages (2 MiB each with Linux's usual 4 KiB pages) an array may
// hold no whole aligned one.
const hugeMin = 4 << 20

// growHuge returns s with a capacity of c: a new array, s's elements
// copied into it, that the kernel is asked to back with transparent
// huge pages before the copy touches it (adviseHuge; where the kernel
// gives them only on request, its default "madvise" setting). Memory
// fresh from the system is untouched until then; memory the Go heap
// reuses is zeroed by make first and keeps the pages it had.
// The arena and its items are the largest arrays a reshard fills, each
// page of them touched first by an append, and on a virtual machine a
// page fault costs microseconds: a 100k-run reshard made about 10,000
// fewer faults with it (bench/results/thp-s16.md). The advice changes
// no byte the sort reads or writes.
func growHuge[T any](s []T, c int) []T {
	n := make([]T, len(s), c)
	var zero T
	if size := c * int(unsafe.Sizeof(zero)); size >= hugeMin {
		adviseHuge(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(n))), size))
	}
	copy(n, s)
	return n
}

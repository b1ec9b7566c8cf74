//go:build cgo && linux

package cli

/*
#include <malloc.h>

// gen_mallopt sets the C allocator's arena count and its fixed mmap
// threshold; it returns how many of the two settings took (glibc's
// mallopt returns 1 for a setting it accepts).
static int gen_mallopt(int arenas, int mmapThreshold) {
	int ok = 0;
#ifdef M_ARENA_MAX
	ok += mallopt(M_ARENA_MAX, arenas);
#endif
#ifdef M_MMAP_THRESHOLD
	ok += mallopt(M_MMAP_THRESHOLD, mmapThreshold);
#endif
	return ok;
}

static int gen_glibc(void) {
#ifdef __GLIBC__
	return 1;
#else
	return 0;
#endif
}
*/
import "C"

// setMalloc applies cMalloc's settings to the C allocator (pebble's
// block cache and memtables live there in a cgo build) and reports how
// many of its two settings it accepted.
func setMalloc(s cMalloc) int {
	return int(C.gen_mallopt(C.int(s.arenas), C.int(s.mmapThreshold)))
}

// mallocIsGlibc says whether the C library is glibc, whose mallopt
// accepts both of setMalloc's settings. For TestSetMalloc.
func mallocIsGlibc() bool { return C.gen_glibc() == 1 }

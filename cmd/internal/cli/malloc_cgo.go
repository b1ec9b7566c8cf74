//go:build cgo && linux

package cli

/*
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// fusee_arenas caps glibc's malloc arenas at one a core before the Go
// runtime starts (a constructor), unless MALLOC_ARENA_MAX is set. It runs
// before any thread can have made an arena of its own: a mallopt from Go
// code later came too late (at 1M runs, gen still had five arenas and a
// peak 30-40 MiB higher than with the variable set; bench/results/gen9.md).
__attribute__((constructor)) static void fusee_arenas(void) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	if (getenv("MALLOC_ARENA_MAX") != NULL) {
		return;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	mallopt(M_ARENA_MAX, n < 1 ? 1 : (int)n);
#endif
}

static int fusee_glibc(void) {
#ifdef __GLIBC__
	return 1;
#else
	return 0;
#endif
}

// fusee_touch mallocs and frees from the calling thread, which gives the
// thread an arena (glibc attaches one at a thread's first malloc).
static void fusee_touch(void) {
	void *p = malloc(64);
	memset(p, 1, 64);
	free(p);
}

// fusee_arena_count counts the arenas glibc's malloc_info reports.
static int fusee_arena_count(void) {
#ifdef __GLIBC__
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) {
		return -1;
	}
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) {
		n++;
	}
	free(buf);
	return n;
#else
	return -1;
#endif
}
*/
import "C"

// mallocIsGlibc says whether the C library is glibc, whose arenas the
// constructor above caps. For TestArenasCapped.
func mallocIsGlibc() bool { return C.fusee_glibc() == 1 }

// touchMalloc mallocs and frees once from the calling thread.
func touchMalloc() { C.fusee_touch() }

// mallocArenas is how many arenas glibc's malloc has made (-1: unknown).
func mallocArenas() int { return int(C.fusee_arena_count()) }

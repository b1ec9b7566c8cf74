//go:build cgo && linux

package cli

/*
#define _GNU_SOURCE
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// fusee_arena_cap is the cap fusee_arenas set (0: none).
static int fusee_arena_cap;

// fusee_arenas caps glibc's malloc arenas at one a core before the Go
// runtime starts (a constructor), unless MALLOC_ARENA_MAX is set. It runs
// before any thread can have made an arena of its own: a mallopt from Go
// code later came too late (at 1M runs, gen still had five arenas and a
// peak 30-40 MiB higher than with the variable set; bench/results/gen9.md).
// A core is one the process may run on (its affinity, as Go's NumCPU
// counts them), not one the machine has: in a container pinned to 2 of
// 64 cores, 64 arenas would be no cap at all.
__attribute__((constructor)) static void fusee_arenas(void) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	if (getenv("MALLOC_ARENA_MAX") != NULL) {
		return;
	}
	long n = 0;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		n = CPU_COUNT(&set);
	}
	if (n < 1) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
	}
	fusee_arena_cap = n < 1 ? 1 : (int)n;
	mallopt(M_ARENA_MAX, fusee_arena_cap);
#endif
}

static int fusee_cap(void) { return fusee_arena_cap; }

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

// arenaCap is the cap on glibc's arenas the constructor set (0: none).
func arenaCap() int { return int(C.fusee_cap()) }

// touchMalloc mallocs and frees once from the calling thread.
func touchMalloc() { C.fusee_touch() }

// mallocArenas is how many arenas glibc's malloc has made (-1: unknown).
func mallocArenas() int { return int(C.fusee_arena_count()) }

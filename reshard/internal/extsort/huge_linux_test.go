package extsort

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags is the VmFlags line of the mapping of this process that holds
// addr (/proc/self/smaps).
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps here: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// TestGrowHugeAdvises checks that the arrays the sort grows past hugeMin
// are marked for huge pages (VmFlags "hg"), both kinds, with what they
// held copied.
func TestGrowHugeAdvises(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	arena := growHuge([]byte("the first pairs"), hugeMin+1)
	if string(arena) != "the first pairs" || cap(arena) != hugeMin+1 {
		t.Fatalf("grown arena %q, cap %d", arena, cap(arena))
	}
	items := growHuge([]sortItem{{p1: 1, off: 2}, {p1: 3, shard: 4}}, 2*hugeMin/sortItemBytes)
	if !slices.Equal(items, []sortItem{{p1: 1, off: 2}, {p1: 3, shard: 4}}) {
		t.Fatalf("grown items %v", items)
	}
	for name, addr := range map[string]uintptr{
		"arena": uintptr(unsafe.Pointer(unsafe.SliceData(arena))),
		"items": uintptr(unsafe.Pointer(unsafe.SliceData(items))),
	} {
		if flags := vmFlags(t, addr); !slices.Contains(flags, "hg") {
			t.Errorf("the %s's mapping is not advised for huge pages: VmFlags %v", name, flags)
		}
	}
}

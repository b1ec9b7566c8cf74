package cli

import "testing"

// TestSetMalloc: with glibc, setMalloc passes both of gen's settings to
// mallopt and it accepts them. (glibc's mallopt accepts nearly any value,
// so this checks that the settings are made, not what they do; their
// effect on gen's peak RSS is measured in bench/results/gen7.md.)
func TestSetMalloc(t *testing.T) {
	if !mallocIsGlibc() {
		t.Skip("not a cgo build with glibc: gen leaves the C allocator as it is")
	}
	if n := setMalloc(genCMalloc); n != 2 {
		t.Fatalf("setMalloc(%+v) = %d settings accepted, want 2", genCMalloc, n)
	}
}

package testtier

import (
	"slices"
	"testing"
)

// TestPickCoversEveryCase: stride days of samples (offsets 0..stride-1)
// take every case once, and each day takes at least one.
func TestPickCoversEveryCase(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for stride := 1; stride <= 5; stride++ {
			seen := make([]int, n)
			for off := range stride {
				got := pick(n, stride, off)
				if len(got) == 0 {
					t.Fatalf("n %d stride %d offset %d: no case", n, stride, off)
				}
				if !slices.IsSorted(got) {
					t.Fatalf("n %d stride %d offset %d: %v", n, stride, off, got)
				}
				for _, i := range got {
					seen[i]++
				}
			}
			for i, c := range seen {
				if c == 0 || (n >= stride && c != 1) {
					t.Fatalf("n %d stride %d: case %d taken %d times in %d days", n, stride, i, c, stride)
				}
			}
		}
	}
}

package journal

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyFilterNoFalseNegatives: every key added is a "maybe", across the
// filter's growth into several parts; keys never added are mostly "no".
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*filterFirstCap).Draw(t, "n")
		salt := rapid.String().Draw(t, "salt")
		f := newKeyFilter()
		for i := range n {
			f.add(fmt.Sprintf("%s/wf-%d", salt, i))
		}
		for i := range n {
			if k := fmt.Sprintf("%s/wf-%d", salt, i); !f.mayHave(k) {
				t.Fatalf("added key %q reported absent (%d keys, %d parts)", k, n, len(f.parts))
			}
		}
		fp := 0
		const probes = 2000
		for i := range probes {
			if f.mayHave(fmt.Sprintf("%s/other-%d", salt, i)) {
				fp++
			}
		}
		if fp > probes/20 {
			t.Fatalf("%d of %d keys never added reported present (%d keys, %d parts)", fp, probes, n, len(f.parts))
		}
	})
}

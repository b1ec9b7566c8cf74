package check_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
)

// Directories the simulator generates (real pebble stores and a real log
// on disk, with a log tail after the last checkpoint) verify clean, and the
// same workload under different shard counts dumps the same.
func TestSimulatedDirectories(t *testing.T) {
	if testing.Short() {
		t.Skip("generates directories on disk")
	}
	for _, seed := range []uint64{3, 4} {
		var first string
		for _, n := range []int{1, 3, 8} {
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("s%d-n%d", seed, n))
			if _, err := sim.Generate(context.Background(), vfs.Default, dir, sim.GenOptions{Shards: n, Runs: 150, Seed: seed}); err != nil {
				t.Fatal(err)
			}
			st, err := check.Load(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d, %d shards: %+v", seed, n, check.Inspect(st).Total)
			for _, f := range check.Verify(st) {
				t.Errorf("seed %d, %d shards: %s [%s]", seed, n, f, f.Severity)
			}
			var b bytes.Buffer
			if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
				t.Fatal(err)
			}
			if first == "" {
				first = b.String()
			} else if b.String() != first {
				t.Errorf("seed %d: %d shards dump differently from 1 shard", seed, n)
			}
		}
	}
}

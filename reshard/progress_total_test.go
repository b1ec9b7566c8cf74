package reshard_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/reshard"
)

// TestProgressTotalAfterReshard: after reshards the next run numbers
// overstate the runs (renumbered runs go above every old number), yet
// verify's and dump's passes announce the run count as their total, from
// their count phase (issue 28 item 9). It lives here, not in
// journal/check, whose tests must not import reshard (reshard imports
// check).
func TestProgressTotalAfterReshard(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	const runs = 2300
	if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: 8, Runs: runs, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	for _, n := range testtier.Subset(t, []int{3, 12, 8}, 2) { // fewer in the quick tier
		rep, err := reshard.Reshard(ctx, vfs.Default, dir, reshard.Options{Shards: n})
		if err != nil {
			t.Fatal(err)
		}
		rep.Close()
	}
	d, err := check.OpenDir(ctx, vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	type call struct {
		phase       string
		done, total int64
	}
	var calls []call
	opts := check.Options{Progress: func(phase string, done, total int64) { calls = append(calls, call{phase, done, total}) }}
	totals := func(what string, phases ...string) {
		t.Helper()
		ended := map[string]bool{}
		for _, c := range calls {
			for _, p := range phases {
				if c.phase != p {
					continue
				}
				if c.total != runs || c.done > c.total {
					t.Fatalf("%s: %s announced %d/%d, want a total of %d runs", what, p, c.done, c.total, runs)
				}
				ended[p] = ended[p] || c.done == runs
			}
		}
		for _, p := range phases {
			if !ended[p] {
				t.Errorf("%s: %s never reached %d runs: %v", what, p, runs, calls)
			}
		}
	}
	if _, err := d.Verify(ctx, opts, func(check.Finding) error { return nil }); err != nil {
		t.Fatal(err)
	}
	totals("verify", check.PhaseCheck)
	calls = nil
	if err := d.WriteDump(ctx, io.Discard, check.DumpOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	totals("dump", check.PhaseSort, check.PhaseWrite)
}

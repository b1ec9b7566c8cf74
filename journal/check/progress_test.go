package check

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/sim"
)

type progressCall struct {
	phase       string
	done, total int64
}

// Verify and dump report their passes through Options.Progress: every
// progressEvery runs with a total no smaller than done (exactly the run
// count on a generated directory, whose next run numbers say it), then
// once at the end of each pass with done = total = the runs passed.
func TestProgressReportsEachPass(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: 3, Runs: 2*progressEvery + 300, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(ctx, vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var calls []progressCall
	opts := Options{Progress: func(phase string, done, total int64) { calls = append(calls, progressCall{phase, done, total}) }}
	runs, err := d.Verify(ctx, opts, func(Finding) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	checkPasses(t, "verify", withoutJoin(t, calls, 3), int64(runs), PhaseCount, PhaseCheck)

	calls = nil
	if err := d.WriteDump(ctx, io.Discard, DumpOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	checkPasses(t, "dump", calls, int64(runs), PhaseCount, PhaseSort, PhaseWrite)
}

func checkPasses(t *testing.T, what string, calls []progressCall, runs int64, phases ...string) {
	t.Helper()
	i := 0
	for _, phase := range phases {
		var last int64
		for ; i < len(calls) && calls[i].done != calls[i].total; i++ {
			c := calls[i]
			if c.phase != phase || c.done <= last || c.done%progressEvery != 0 || c.total != runs {
				t.Fatalf("%s: call %d is %+v, want phase %s, done a multiple of %d above %d, total %d", what, i, c, phase, progressEvery, last, runs)
			}
			last = c.done
		}
		if last != runs/progressEvery*progressEvery {
			t.Errorf("%s %s: the last running call said %d runs, want %d", what, phase, last, runs/progressEvery*progressEvery)
		}
		if i == len(calls) || calls[i] != (progressCall{phase, runs, runs}) {
			t.Fatalf("%s: calls %v: want %s ending with %d/%d at %d", what, calls, phase, runs, runs, i)
		}
		i++
	}
	if i != len(calls) {
		t.Errorf("%s: calls after the last pass: %v", what, calls[i:])
	}
}

// withoutJoin checks that verify's calls end with the reference join's,
// a shard at a time from 0 to shards (issue 28 item 16: seconds without
// progress after the check pass), and returns the calls before them.
func withoutJoin(t *testing.T, calls []progressCall, shards int64) []progressCall {
	t.Helper()
	n := len(calls) - int(shards) - 1
	if n < 0 {
		t.Fatalf("verify reported %d calls, fewer than its join's", len(calls))
	}
	for i, c := range calls[n:] {
		if c != (progressCall{PhaseJoin, int64(i), shards}) {
			t.Fatalf("verify's join call %d is %+v, want %d of %d shards", i, c, i, shards)
		}
	}
	return calls[:n]
}

package sim

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/reshard"
)

// Drive's progress counts the runs it starts, not the shards' next run
// numbers, which a reshard leaves above the runs there are (issue 28 item
// 10: fusee demo's drive said "4351 runs started" above a table of 2376
// runs): after a reshard, the runs it started are the runs it ends with
// less the runs it found, whatever the run numbers.
func TestDriveProgressCountsRuns(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := Generate(ctx, vfs.Default, dir, GenOptions{Shards: 4, Runs: 300, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	rep, err := reshard.Reshard(ctx, vfs.Default, dir, reshard.Options{Shards: 7})
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	var last Progress
	drove, err := Drive(ctx, vfs.Default, dir, DriveOptions{Progress: func(p Progress) {
		if p.Phase == "" { // the run, not the census after it
			last = p
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if started := drove.Census.Runs - 300; last.Started != started {
		t.Fatalf("drive's progress says %d runs started, the directory went from 300 to %d runs", last.Started, drove.Census.Runs)
	}
}

// Gen and drive end with a census phase that covers closing the directory
// and counting it, a shard at a time from 0, instead of seconds without
// progress after the last run started (issue 28 item 16: gen was silent
// for 19 s after "done" at 200k runs).
func TestGenAndDriveReportTheirCensus(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	var calls []Progress
	record := func(p Progress) { calls = append(calls, p) }
	census := func(what string, shards int) {
		t.Helper()
		var got []Progress
		for _, p := range calls {
			if p.Phase != "" {
				got = append(got, p)
			}
		}
		if len(got) != shards+1 {
			t.Fatalf("%s: census calls %+v, want 0 to %d shards", what, got, shards)
		}
		for i, p := range got {
			if p.Phase != "census" || p.Done != i || p.Total != shards {
				t.Fatalf("%s: census call %d is %+v", what, i, p)
			}
		}
		if tail := calls[len(calls)-len(got):]; tail[0].Phase != "census" {
			t.Fatalf("%s: the census calls are not the last", what)
		}
	}
	if _, err := Generate(ctx, vfs.Default, dir, GenOptions{Shards: 3, Runs: 200, Seed: 7, Progress: record}); err != nil {
		t.Fatal(err)
	}
	census("gen", 3)
	calls = nil
	if _, err := Drive(ctx, vfs.Default, dir, DriveOptions{Progress: record}); err != nil {
		t.Fatal(err)
	}
	census("drive", 3)
}

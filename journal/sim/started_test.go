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
	drove, err := Drive(ctx, vfs.Default, dir, DriveOptions{Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if started := drove.Census.Runs - 300; last.Started != started {
		t.Fatalf("drive's progress says %d runs started, the directory went from 300 to %d runs", last.Started, drove.Census.Runs)
	}
}

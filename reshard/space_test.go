package reshard_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/reshard"
)

// TestSpaceNeededCoversThePeak: the free space a reshard asks for must
// cover what reshard.new holds at its largest (the new shards and the
// sort's scratch files: measured whenever a new shard's sorted keys are
// merged, before their scratch files go, and once every shard is
// checked), without the
// fixed margin, so that the estimate is checked where it matters at
// scale. A small memory budget makes the sort spill as it does at 10M
// runs, and a first reshard leaves compact stores (a fresh gen's hold
// many versions of each run), as a 10M directory's are: their scratch
// files, uncompressed, are then larger than the whole old directory.
func TestSpaceNeededCoversThePeak(t *testing.T) {
	for _, tc := range testtier.Subset(t, []struct{ genN, oldN, newN int }{{5, 8, 3}, {4, 7, 12}, {3, 4, 8}}, 2) { // fewer in the quick tier
		t.Run(fmt.Sprintf("%d->%d", tc.oldN, tc.newN), func(t *testing.T) {
			dir := genDir(t, tc.genN, scaled(3000), uint64(tc.oldN*100+tc.newN))
			doReshard(t, dir, tc.oldN, reshard.Options{})
			dry := doReshard(t, dir, tc.newN, reshard.Options{DryRun: true, Memory: 1 << 20})
			var mu sync.Mutex
			var peak int64
			measure := func() {
				mu.Lock()
				defer mu.Unlock()
				peak = max(peak, treeBytes(t, filepath.Join(dir, reshard.NewDirName)))
			}
			reshard.SetTestHook(func(step string) error {
				if step == "new-checked" {
					measure()
				}
				return nil
			})
			defer reshard.SetTestHook(nil)
			reshard.SetMergedHook(func(int) { measure() })
			defer reshard.SetMergedHook(nil)
			rep := doReshard(t, dir, tc.newN, reshard.Options{Memory: 1 << 20})
			if peak == 0 {
				t.Fatal("the new-checked step was not reached")
			}
			if rep.SpaceNeeded != dry.SpaceNeeded {
				t.Errorf("the dry run estimated %d bytes, the real run %d", dry.SpaceNeeded, rep.SpaceNeeded)
			}
			t.Logf("%d -> %d: reshard.new peaked at %d bytes, estimate %d + %d margin (old directory %d bytes)",
				tc.oldN, tc.newN, peak, rep.SpaceNeeded-reshard.SpaceMargin, reshard.SpaceMargin, rep.Counts.BytesRead)
			if peak > rep.SpaceNeeded-reshard.SpaceMargin {
				t.Errorf("reshard.new peaked at %d bytes, more than the %d estimated without the margin", peak, rep.SpaceNeeded-reshard.SpaceMargin)
			}
			// Not far above either (issue 28 item 8: the dry run said
			// 205 MiB, the refusal 109 MiB, the peak was 128 MiB): the part
			// that grows with the directory is within 25% of the peak, and
			// the fixed parts (the margin, and 16 KiB a new store, which
			// weigh in a small directory: under -race this one is 400 KB
			// and 8 stores' allowance alone is 31% of it) are all that is
			// added for a small one.
			// The allowance for the stores being written while every
			// scratch file is there is left out too where the sort's
			// scratch files are removed as merged: stores this small are
			// held in their writers' buffers until they finish, so the
			// peak here cannot show it (at 100k runs, 8 -> 3 peaked at
			// 48.9 MB with 43.5 MB of scratch files, at 1M runs at 589 MB
			// with 438 MB).
			fixed := int64(tc.newN) * reshard.StoreFiles
			if tc.newN%tc.oldN != 0 {
				fixed += reshard.StoresBeingWritten(rep.Counts.BytesRead, 1<<20, tc.newN)
			}
			if est := rep.SpaceNeeded - reshard.SpaceMargin - fixed; est > peak+peak/4 {
				t.Errorf("the estimate without its fixed parts, %d bytes, is more than 25%% above the peak of %d", est, peak)
			}
		})
	}
}

// treeBytes is the size of the files under root. It runs while a
// reshard writes and removes files there (on a store writer's
// goroutine): a file gone meanwhile counts for nothing, and another
// error is reported with t.Errorf (t.Fatal would end that goroutine).
func treeBytes(t testing.TB, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Errorf("measuring %s: %v", root, err)
	}
	return n
}

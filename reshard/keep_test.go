package reshard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// original is what a directory held before a reshard: every file's hash
// and both dumps.
type original struct{ files, logical, physical string }

func snapshotOf(t testing.TB, dir string) original {
	t.Helper()
	return original{fileHashes(t, dir), logicalDump(t, dir), physicalDump(t, dir)}
}

func (o original) same(t testing.TB, what, dir string) {
	t.Helper()
	if got := fileHashes(t, dir); got != o.files {
		t.Fatalf("%s: the files differ from the original:\n%s\nwant\n%s", what, got, o.files)
	}
	sameDump(t, what, o.logical, logicalDump(t, dir))
	if physicalDump(t, dir) != o.physical {
		t.Fatalf("%s: the physical dump differs from the original", what)
	}
}

func undo(t testing.TB, dir string) *reshard.Report {
	t.Helper()
	rep, err := reshard.Undo(context.Background(), vfs.Default, dir)
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	return rep
}

func gone(t testing.TB, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", n, err)
		}
	}
}

// TestKeepOldThenUndo: --keep-old keeps the old layout in reshard.kept,
// the resharded directory is clean and opens; a second reshard is refused
// while it is kept; undo restores the old directory byte for byte.
func TestKeepOldThenUndo(t *testing.T) {
	dir := genDir(t, 3, 200, 51)
	orig := snapshotOf(t, dir)
	rep := doReshard(t, dir, 5, reshard.Options{KeepOld: true})
	if rep.Kept != filepath.Join(dir, reshard.KeptDirName) {
		t.Fatalf("report says kept %q", rep.Kept)
	}
	gone(t, dir, reshard.NewDirName, reshard.OldDirName)
	verifyClean(t, dir)
	sameDump(t, "after a reshard keeping the old layout", orig.logical, logicalDump(t, dir))
	_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 4})
	var ke *reshard.KeptError
	if !errors.As(err, &ke) {
		t.Fatalf("a reshard over a kept layout: %v, want a KeptError", err)
	}
	if rep := undo(t, dir); rep.Outcome != reshard.OutcomeUndone || rep.NewShards != 3 {
		t.Fatalf("undo: outcome %s to %d shards", rep.Outcome, rep.NewShards)
	}
	gone(t, dir, reshard.NewDirName, reshard.OldDirName, reshard.KeptDirName)
	orig.same(t, "after undo", dir)
	var ue *reshard.UndoError
	if _, err := reshard.Undo(context.Background(), vfs.Default, dir); !errors.As(err, &ue) {
		t.Fatalf("a second undo: %v, want an UndoError", err)
	}
}

// TestUndoRefusedAfterChange: once the engine has opened the resharded
// directory and acknowledged an entry, undo refuses and says why; nothing
// changes.
func TestUndoRefusedAfterChange(t *testing.T) {
	dir := genDir(t, 3, 200, 52)
	doReshard(t, dir, 2, reshard.Options{KeepOld: true})
	commitOne(t, dir)
	files := fileHashes(t, dir)
	_, err := reshard.Undo(context.Background(), vfs.Default, dir)
	var ue *reshard.UndoError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "an engine opened it and wrote") {
		t.Fatalf("undo after a change: %v, want an UndoError saying why", err)
	}
	if fileHashes(t, dir) != files {
		t.Fatal("a refused undo changed the directory")
	}
	if _, err := os.Stat(filepath.Join(dir, reshard.KeptDirName, "wal")); err != nil {
		t.Fatalf("a refused undo touched the kept layout: %v", err)
	}
}

// TestUndoInterruptedAtEveryStep stops an undo at each of its steps (as
// a crash there would) and finishes it: with `fusee reshard --undo` again,
// or with `fusee reshard <dir>`, which every opener's message names. The
// result is the original directory, byte for byte. A reshard with
// --keep-old stopped between keeping and its final fusee.meta is
// finished the same way and keeps its layout.
func TestUndoInterruptedAtEveryStep(t *testing.T) {
	steps := []string{"undo-marked", "undo-meta-switching", "old-wal-aside", "new-wal-in",
		"old-shards-aside", "new-shards-in", "meta-final"}
	for i, step := range steps {
		t.Run(step, func(t *testing.T) {
			dir := genDir(t, 3, 150, 53)
			orig := snapshotOf(t, dir)
			// The reshard itself stops once, after keeping, and is finished.
			reshard.SetTestHook(func(s string) error {
				if s == "old-kept" {
					return errStop
				}
				return nil
			})
			_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 4, KeepOld: true})
			reshard.SetTestHook(nil)
			if !errors.Is(err, errStop) {
				t.Fatalf("reshard: %v, want the test's stop", err)
			}
			doReshard(t, dir, 0, reshard.Options{})
			if _, err := os.Stat(filepath.Join(dir, reshard.KeptDirName, "shards")); err != nil {
				t.Fatalf("the finished reshard kept no layout: %v", err)
			}

			reshard.SetTestHook(func(s string) error {
				if s == step {
					return errStop
				}
				return nil
			})
			_, err = reshard.Undo(context.Background(), vfs.Default, dir)
			reshard.SetTestHook(nil)
			if !errors.Is(err, errStop) {
				t.Fatalf("undo: %v, want the test's stop", err)
			}
			m, err := meta.ReadAny(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			if switching := step != "undo-marked" && step != "meta-final"; m.Switching() != switching {
				t.Fatalf("stopped at %s, meta says %+v", step, m)
			}
			if i%2 == 0 {
				undo(t, dir)
			} else {
				doReshard(t, dir, 0, reshard.Options{})
			}
			gone(t, dir, reshard.NewDirName, reshard.OldDirName, reshard.KeptDirName)
			orig.same(t, "undo finished after stopping at "+step, dir)
		})
	}
}

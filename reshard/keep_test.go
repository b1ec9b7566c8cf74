package reshard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
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

// TestUndoAfterEngineOpen: what an engine's open does to an undo. Chosen
// rule: undo goes on exactly when the fingerprint (fusee.meta, the log's
// end, every store's checkpoint header) is the one the reshard recorded.
// A read-only open (inspect, verify, dump) writes nothing, and the undo
// restores the original file for file. A read-write open that
// acknowledges nothing still starts a new log segment, so the log's end
// moves and the undo is refused, nothing changed: fusee cannot tell an
// engine that acknowledged nothing from one whose acknowledgements are
// all in that segment without reading it as the engine would, and a
// refusal loses nothing (reshard back instead). A checkpoint alone is
// refused the same way, naming the shard.
func TestUndoAfterEngineOpen(t *testing.T) {
	refused := func(t *testing.T, dir, why string) {
		t.Helper()
		files := fileHashes(t, dir)
		kept, err := hashFiles(vfs.Default, filepath.Join(dir, reshard.KeptDirName))
		if err != nil {
			t.Fatal(err)
		}
		_, err = reshard.Undo(context.Background(), vfs.Default, dir)
		var ue *reshard.UndoError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), why) || !strings.HasSuffix(err.Error(), "nothing was changed") {
			t.Fatalf("undo: %v, want an UndoError saying %q", err, why)
		}
		after, _ := hashFiles(vfs.Default, filepath.Join(dir, reshard.KeptDirName))
		if fileHashes(t, dir) != files || after != kept {
			t.Fatal("a refused undo changed the directory")
		}
	}
	t.Run("read-only", func(t *testing.T) {
		dir := genDir(t, 3, scaled(150), 54)
		orig := snapshotOf(t, dir)
		doReshard(t, dir, 5, reshard.Options{KeepOld: true})
		db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, dir)
		undo(t, dir)
		orig.same(t, "undone after a read-only open", dir)
	})
	t.Run("read-write-nothing-acknowledged", func(t *testing.T) {
		dir := genDir(t, 3, scaled(150), 55)
		doReshard(t, dir, 5, reshard.Options{KeepOld: true})
		db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, "the directory changed since the reshard (the log ends at segment")
	})
	t.Run("checkpoint", func(t *testing.T) {
		dir := genDir(t, 3, scaled(150), 56)
		doReshard(t, dir, 5, reshard.Options{KeepOld: true})
		db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, "was checkpointed at LSN")
	})
}

// TestUndoRefusedPartialKept: a kept layout that lost a file, gained one
// or has one of another size (an interrupted `rm -r`, say) is never
// restored: undo refuses, names the file and changes nothing; the
// directory in place opens; --discard-kept removes what is left.
func TestUndoRefusedPartialKept(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		damage    func(t *testing.T, kept string)
	}{
		{"file-removed", "the kept layout is not whole (reshard.kept/wal/0000000000000001.log is missing", func(t *testing.T, kept string) {
			if err := os.Remove(filepath.Join(kept, "wal", "0000000000000001.log")); err != nil {
				t.Fatal(err)
			}
		}},
		{"shards-removed", "the kept layout is not whole (reshard.kept/shards/0000/store/", func(t *testing.T, kept string) {
			if err := os.RemoveAll(filepath.Join(kept, "shards")); err != nil {
				t.Fatal(err)
			}
		}},
		{"file-added", "the kept layout is not whole (reshard.kept/wal/stray was not kept by the reshard", func(t *testing.T, kept string) {
			if err := os.WriteFile(filepath.Join(kept, "wal", "stray"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"record-removed", "its kept layout's record cannot be read (", func(t *testing.T, kept string) {
			if err := os.Remove(filepath.Join(kept, "kept.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"file-truncated", "the kept layout is not whole (reshard.kept/wal/0000000000000001.log has 10 bytes, not", func(t *testing.T, kept string) {
			if err := os.Truncate(filepath.Join(kept, "wal", "0000000000000001.log"), 10); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := genDir(t, 3, scaled(100), 57)
			before := logicalDump(t, dir)
			doReshard(t, dir, 5, reshard.Options{KeepOld: true})
			kept := filepath.Join(dir, reshard.KeptDirName)
			tc.damage(t, kept)
			files := fileHashes(t, dir)
			keptFiles, err := hashFiles(vfs.Default, kept)
			if err != nil {
				t.Fatal(err)
			}
			_, err = reshard.Undo(context.Background(), vfs.Default, dir)
			var ue *reshard.UndoError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.why) || ue.Kind != reshard.UndoKeptDamaged ||
				!strings.HasSuffix(err.Error(), "; nothing was changed") {
				t.Fatalf("undo of a damaged kept layout: %v", err)
			}
			if after, _ := hashFiles(vfs.Default, kept); fileHashes(t, dir) != files || after != keptFiles {
				t.Fatal("a refused undo changed the directory")
			}
			verifyClean(t, dir)
			sameDump(t, "after a refused undo", before, logicalDump(t, dir))
			st, err := reshard.ReadStatus(vfs.Default, dir)
			if err != nil || st.Kept == nil || (st.Kept.Damaged != "") != (tc.name == "record-removed") {
				t.Fatalf("inspect's status: %v, %+v", err, st)
			}
			rep, err := reshard.DiscardKept(context.Background(), vfs.Default, dir)
			if err != nil || rep.Outcome != reshard.OutcomeDiscarded {
				t.Fatalf("discard: %v (%+v)", err, rep)
			}
			gone(t, dir, reshard.KeptDirName, reshard.OldDirName, reshard.NewDirName)
			if fileHashes(t, dir) != files {
				t.Fatal("discarding changed the directory in place")
			}
			if rep, err := reshard.DiscardKept(context.Background(), vfs.Default, dir); err != nil || rep.Outcome != reshard.OutcomeNothingToDo {
				t.Fatalf("a second discard: %v (%+v)", err, rep)
			}
		})
	}
}

// TestDiscardRefusedMidSwitch: while fusee.meta says format=reshard (a
// keeping reshard stopped after moving its old layout to reshard.kept),
// the kept layout may be what the switch needs: a discard is refused
// (meta.ErrSwitching, exit 4) and changes nothing; once the reshard is
// finished, it removes the layout.
func TestDiscardRefusedMidSwitch(t *testing.T) {
	dir := genDir(t, 3, scaled(100), 58)
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
	before, err := hashFiles(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = reshard.DiscardKept(context.Background(), vfs.Default, dir)
	var de *reshard.DiscardError
	if !errors.Is(err, meta.ErrSwitching) || !errors.As(err, &de) || de.Leftover != "" ||
		!strings.Contains(err.Error(), "cannot discard reshard.kept") || !strings.HasSuffix(err.Error(), "; nothing was changed") {
		t.Fatalf("discard mid-switch: %v", err)
	}
	if after, _ := hashFiles(vfs.Default, dir); after != before {
		t.Fatal("a refused discard changed the directory")
	}
	doReshard(t, dir, 0, reshard.Options{})
	if rep, err := reshard.DiscardKept(context.Background(), vfs.Default, dir); err != nil || rep.Outcome != reshard.OutcomeDiscarded {
		t.Fatalf("discard after finishing: %v (%+v)", err, rep)
	}
	gone(t, dir, reshard.KeptDirName, reshard.OldDirName, reshard.NewDirName)
	verifyClean(t, dir)
}

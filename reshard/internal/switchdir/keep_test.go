package switchdir

import (
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestLeftoversAndSource: what a switch leaves behind with fusee.meta at
// rest (reshard.new, reshard.old, a reshard.kept an undo emptied) is a
// leftover, a kept layout that still holds its log is not; the switch
// takes its source from reshard.kept only while an undo's marker is
// there, and Keeps finds the kept layout's record wherever the switch
// has moved it.
func TestLeftoversAndSource(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/d"
	mkdir := func(p string) {
		t.Helper()
		if err := fs.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) {
		t.Helper()
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	newDir, oldDir, kept := fs.PathJoin(dir, NewDirName), fs.PathJoin(dir, OldDirName), fs.PathJoin(dir, KeptDirName)
	mkdir(newDir)
	mkdir(oldDir)
	mkdir(fs.PathJoin(kept, "wal"))
	if got, want := Leftovers(fs, dir), []string{newDir, oldDir}; !slices.Equal(got, want) {
		t.Fatalf("leftovers %v, want %v (a kept layout with its log is no leftover)", got, want)
	}
	if err := fs.RemoveAll(fs.PathJoin(kept, "wal")); err != nil {
		t.Fatal(err)
	}
	if got, want := Leftovers(fs, dir), []string{newDir, oldDir, kept}; !slices.Equal(got, want) {
		t.Fatalf("leftovers %v, want %v (an emptied kept layout is one)", got, want)
	}
	if got := Source(fs, dir); got != newDir {
		t.Fatalf("source %s, want %s", got, newDir)
	}
	touch(fs.PathJoin(kept, UndoMarker))
	if got := Source(fs, dir); got != kept {
		t.Fatalf("source with the undo marker %s, want %s", got, kept)
	}
	if Keeps(fs, dir) {
		t.Fatal("Keeps without a record")
	}
	for _, d := range []string{newDir, oldDir, kept} {
		touch(fs.PathJoin(d, KeptRecordName))
		if !Keeps(fs, dir) {
			t.Fatalf("Keeps misses the record in %s", d)
		}
		if err := fs.Remove(fs.PathJoin(d, KeptRecordName)); err != nil {
			t.Fatal(err)
		}
	}
}

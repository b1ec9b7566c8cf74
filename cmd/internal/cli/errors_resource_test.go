package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A full --scratch disk is not an unreadable directory: the message names
// the scratch file and says to free space or move --scratch, never to
// restore a backup (issue 28 item 2: `verify DIR --memory 1 --scratch
// FULL` said "unreadable" and "a damaged log or store means restoring from
// a backup"). A full data directory's filesystem says so as well.
func TestOutOfSpaceIsNotDamage(t *testing.T) {
	dir := genDir(t)
	scratch := filepath.Join(os.TempDir(), "fusee-check-1", "refs-2", "000004.sst")
	err := fmt.Errorf("scratch store %s: %w", filepath.Dir(scratch), &fs.PathError{Op: "write", Path: scratch, Err: syscall.ENOSPC})
	got := explainDirError(vfs.Default, dir, err)
	want := "the scratch space is full: no space left writing " + scratch + ", where the sorts and joins that outgrow --memory spill; " +
		"the data directory is not at fault: free space there, or give --scratch DIR on a filesystem with more room (a larger --memory spills less)"
	if got.Error() != want || !ranOut(got) {
		t.Errorf("scratch full:\n got %v\nwant %s", got, want)
	}
	inDir := filepath.Join(dir, "shards", "0000", "store", "000009.sst")
	got = explainDirError(vfs.Default, dir, &fs.PathError{Op: "write", Path: inDir, Err: syscall.ENOSPC})
	if !strings.HasPrefix(got.Error(), "no space left on the data directory's filesystem writing "+inDir) || strings.Contains(got.Error(), "backup") {
		t.Errorf("data directory full: %v", got)
	}
}

// Too many open files names the limit and how far to raise it, for the
// commands that open every store (issue 28 item 3).
func TestTooManyOpenFilesIsNotDamage(t *testing.T) {
	dir := genDir(t)
	err := fmt.Errorf("opening shard store %s: %w", filepath.Join(dir, "shards", "0002", "store"),
		&fs.PathError{Op: "open", Path: filepath.Join(dir, "shards", "0002", "store", "MANIFEST-000001"), Err: syscall.EMFILE})
	got := explainDirError(vfs.Default, dir, err)
	if !ranOut(got) || !strings.Contains(got.Error(), "the directory is not damaged: raise the limit to at least ") ||
		!strings.Contains(got.Error(), "its 3 shard stores hold ") || strings.Contains(got.Error(), "backup") {
		t.Errorf("EMFILE: %v", got)
	}
}

package meta

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// SyncDir fsyncs the directory dir, so that the entries just created,
// renamed or removed in it survive a crash. A file's own fsync does not
// make its name durable; every writer in fusee that adds, renames or
// removes a name calls this on the directory holding it.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// testHookBeforeRename, when set, runs after ReplaceFile has written and
// synced its temporary file and before it renames it over the target; an
// error aborts the replace. Tests use it to stop a write at that point.
var testHookBeforeRename func(tmpPath string) error

// ReplaceFile replaces the file at path with data, atomically and
// durably: data goes to a temporary file in the same directory (named
// ".<base>.tmp<random>"), which is fsynced, closed and renamed over path;
// then the directory is fsynced, so the rename itself survives a crash. A
// reader, or the directory after a crash at any point, holds the old file
// or the new one, whole, never a mix. Once it returns nil the new file is
// durable. On an error the temporary file is removed (a crash can still
// leave one behind; see removeLeftovers for fusee.meta's).
//
// The temporary file stays in path's directory, not $TMPDIR, so that the
// rename never crosses filesystems and one fsync of the directory covers
// both names.
func ReplaceFile(fs vfs.FS, path string, data []byte) error {
	return ReplaceFileWith(fs, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// ReplaceFileWith is ReplaceFile for content too large to hold in memory:
// write streams it (through a buffer) into the temporary file, with the
// same atomicity and durability; an error from write aborts the replace
// and leaves the old file.
func ReplaceFileWith(fs vfs.FS, path string, write func(io.Writer) error) error {
	p, err := CreatePending(fs, path)
	if err != nil {
		return err
	}
	return p.Commit(write)
}

// A Pending is a replacement of a file begun: its temporary file exists
// (so a path whose directory is missing or not writable fails before any
// work it would record is done) and Commit fills it and puts it in place
// as ReplaceFileWith does. Abort, or a failed Commit, removes it.
type Pending struct {
	fs        vfs.FS
	path, tmp string
	f         vfs.File
}

// CreatePending creates the temporary file of a replacement of path.
func CreatePending(fs vfs.FS, path string) (*Pending, error) {
	dir := fs.PathDir(path)
	tmp := fs.PathJoin(dir, "."+fs.PathBase(path)+tempInfix+strconv.FormatUint(rand.Uint64(), 36))
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &Pending{fs: fs, path: path, tmp: tmp, f: f}, nil
}

// Path is the file the replacement is for.
func (p *Pending) Path() string { return p.path }

// Commit writes what write writes to the temporary file, fsyncs it,
// renames it over the file and fsyncs the directory.
func (p *Pending) Commit(write func(io.Writer) error) error {
	fs, path, tmp := p.fs, p.path, p.tmp
	err := writeSynced(p.f, write)
	p.f = nil
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(tmp); err != nil {
			_ = fs.Remove(tmp)
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := fs.Rename(tmp, path); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := SyncDir(fs, fs.PathDir(path)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Abort removes the temporary file of a replacement not committed.
func (p *Pending) Abort() {
	if p.f != nil {
		_ = p.f.Close()
		p.f = nil
		_ = p.fs.Remove(p.tmp)
	}
}

// tempInfix follows the target's name in a temporary file's name.
const tempInfix = ".tmp"

// writeSynced fills f with what write writes, fsyncs and closes it.
func writeSynced(f vfs.File, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 64<<10)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

package meta

import (
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Dir is an open data directory: its lock is held and its fusee.meta has
// been read and checked.
type Dir struct {
	fs   vfs.FS
	path string
	meta Meta
	lock *DirLock
}

// Open takes dir's lock, reads fusee.meta and applies opts (see Check),
// all on FS(fs). On any failure the lock is released. Every program that
// opens a data directory goes through here, on the disk (vfs.Default) and
// in tests on a memory filesystem alike.
func Open(fs vfs.FS, dir string, opts Options) (*Dir, error) {
	fs = FS(fs)
	// A directory without fusee.meta, or with one that does not parse, is
	// not a data directory that can be opened: refuse it before the lock,
	// so that opening one leaves no LOCK file behind. fusee.meta is only
	// ever replaced whole (ReplaceFile), so reading it unlocked sees one
	// version or the other; it is read again under the lock. A directory
	// in the middle of a reshard may be being switched right now: only the
	// lock tells that (in use) from an interrupted reshard.
	m, err := ReadAny(fs, dir)
	if err == nil {
		err = Check(dir, m, opts)
	}
	if err != nil && !errors.Is(err, ErrSwitching) {
		return nil, err
	}
	l, err := Lock(fs, dir)
	if err != nil {
		return nil, err
	}
	m, err = ReadAny(fs, dir)
	if err == nil {
		err = Check(dir, m, opts)
	}
	if err != nil {
		l.Unlock()
		return nil, err
	}
	return &Dir{fs: fs, path: dir, meta: m, lock: l}, nil
}

// Create makes a new data directory at dir with meta m and returns it
// open, on FS(fs). dir may exist, empty (a LOCK file alone is allowed), or
// be created here; its parent must exist. A directory that already has a
// fusee.meta is refused with an error matching fs.ErrExist, any other
// non-empty one with an error naming a file in it; neither is touched.
//
// fill, when not nil, runs with the lock held and before fusee.meta is
// written: it writes the directory's content and makes it durable. If it
// fails, Create releases the lock and returns its error, leaving what it
// wrote. fusee.meta comes last, so a crash before then leaves a directory
// that is not a data directory (docs/format.md §7.2), never a broken one.
func Create(fs vfs.FS, dir string, m Meta, fill func() error) (*Dir, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	fs = FS(fs)
	if err := makeDir(fs, dir); err != nil {
		return nil, err
	}
	// Check before the lock, so that refusing a directory leaves no LOCK
	// file in it, and again under the lock, which another creator may have
	// held in between.
	if err := checkEmpty(fs, dir); err != nil {
		return nil, err
	}
	l, err := Lock(fs, dir)
	if err != nil {
		return nil, err
	}
	d := &Dir{fs: fs, path: dir, lock: l}
	if err := d.create(m, fill); err != nil {
		l.Unlock()
		return nil, err
	}
	return d, nil
}

// makeDir creates dir unless it exists, and makes its name durable. The
// parent must exist: creating it too would need its parent synced as well.
func makeDir(fs vfs.FS, dir string) error {
	parent := fs.PathDir(dir)
	if _, err := fs.Stat(parent); err != nil {
		return fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	return SyncDir(fs, parent)
}

// checkEmpty refuses a directory that holds anything but a LOCK file.
func checkEmpty(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	for _, name := range names {
		if name == FileName {
			return fmt.Errorf("%s is already a fusee data directory (it has a %s); refusing to overwrite it: %w", dir, FileName, iofs.ErrExist)
		}
	}
	for _, name := range names {
		if name != LockName {
			return fmt.Errorf("creating data directory %s: it is not empty (it has %s); create a data directory in a new or empty directory", dir, name)
		}
	}
	return nil
}

func (d *Dir) create(m Meta, fill func() error) error {
	if err := checkEmpty(d.fs, d.path); err != nil {
		return err
	}
	if fill != nil {
		if err := fill(); err != nil {
			return err
		}
	}
	return d.Write(m)
}

// FS is the filesystem the directory was opened on, as FS returned it.
func (d *Dir) FS() vfs.FS { return d.fs }

// Path is the directory's path as given to Open or Create.
func (d *Dir) Path() string { return d.path }

// Meta is the directory's fusee.meta as last read or written.
func (d *Dir) Meta() Meta { return d.meta }

// Write replaces fusee.meta with m, atomically and durably (ReplaceFile).
// If it fails, fusee.meta is either the old file or the new one, whole,
// and Meta still returns the old value.
func (d *Dir) Write(m Meta) error {
	if !d.lock.held() {
		return fmt.Errorf("%s: writing %s after Close", d.path, FileName)
	}
	if err := writeFile(d.fs, d.path, m); err != nil {
		return err
	}
	d.meta = m
	return nil
}

// WriteBytes replaces fusee.meta with data, a fusee.meta's bytes kept as
// they were (an undo puts the old file back byte for byte), the way Write
// does: leftover temporary files removed, then ReplaceFile. data must
// parse.
func (d *Dir) WriteBytes(data []byte) error {
	if !d.lock.held() {
		return fmt.Errorf("%s: writing %s after Close", d.path, FileName)
	}
	path := d.fs.PathJoin(d.path, FileName)
	m, err := Parse(path, data)
	if err != nil {
		return err
	}
	removeLeftovers(d.fs, d.path)
	if err := ReplaceFile(d.fs, path, data); err != nil {
		return err
	}
	d.meta = m
	return nil
}

// Close releases the lock. Calling it again does nothing.
func (d *Dir) Close() error {
	return d.lock.Unlock()
}

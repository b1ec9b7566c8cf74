package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is an open data directory: its lock is held and its fusee.meta has
// been read and checked.
type Dir struct {
	path string
	meta Meta
	lock *DirLock
}

// Open takes dir's lock, reads fusee.meta and applies opts (see Check). On
// any failure the lock is released. Every program that opens a data
// directory goes through here.
func Open(dir string, opts Options) (*Dir, error) {
	// A directory without fusee.meta is not a data directory: refuse it
	// before the lock, so that opening one leaves no LOCK file behind.
	if _, err := ReadAny(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	l, err := Lock(dir)
	if err != nil {
		return nil, err
	}
	m, err := ReadAny(dir)
	if err == nil {
		err = Check(dir, m, opts)
	}
	if err != nil {
		l.Unlock()
		return nil, err
	}
	return &Dir{path: dir, meta: m, lock: l}, nil
}

// Create makes a new data directory at dir with meta m and returns it open.
// dir may exist (empty, or at least without a fusee.meta) or be created
// here; its parent must exist. A directory that already has a fusee.meta is
// refused with an error matching fs.ErrExist.
func Create(dir string, m Meta) (*Dir, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		// Make the new directory's name durable before anything in it.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	l, err := Lock(dir)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: dir, lock: l}
	if err := d.create(m); err != nil {
		l.Unlock()
		return nil, err
	}
	return d, nil
}

func (d *Dir) create(m Meta) error {
	path := filepath.Join(d.path, FileName)
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s is already a fusee data directory (it has a %s); refusing to overwrite it: %w", d.path, FileName, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return d.Write(m)
}

// Path is the directory's path as given to Open or Create.
func (d *Dir) Path() string { return d.path }

// Meta is the directory's fusee.meta as last read or written.
func (d *Dir) Meta() Meta { return d.meta }

// Write replaces fusee.meta with m, atomically and durably (see the
// package documentation). If it fails, fusee.meta is either the old file
// or the new one, whole, and Meta still returns the old value.
func (d *Dir) Write(m Meta) error {
	if d.lock == nil || d.lock.f == nil {
		return fmt.Errorf("%s: writing %s after Close", d.path, FileName)
	}
	if err := writeFile(d.path, m); err != nil {
		return err
	}
	d.meta = m
	return nil
}

// Close releases the lock. Calling it again does nothing.
func (d *Dir) Close() error {
	return d.lock.Unlock()
}

package meta

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS returns fs with its Lock made the one fusee's LOCK files need: on the
// operating system's disk (vfs.Root(fs) is vfs.Default), an exclusive,
// non-blocking flock(2); on any other filesystem (vfs.NewMem, and wrappers
// of it such as errorfs), fs's own Lock. Every other method is fs's.
//
// The reason is that pebble's vfs.Default.Lock takes an fcntl(2) record
// lock, and fcntl and flock locks do not exclude each other: a directory
// locked one way could be opened the other. Every open of a data
// directory, and every pebble store inside one, goes through a filesystem
// returned by FS, so all of them are flock(2) locks, the kind
// docs/format.md §3 specifies and `flock -n <dir>/LOCK true` sees.
//
// The flock lock opens an existing lock file read-only (flock needs no
// write access, and pebble takes each store's own LOCK even when it opens
// the store read-only), creates a missing one with mode 0644 and never
// writes it. The lock belongs to the open file, not the process: a second
// Lock of the same file in the same process fails too, Close releases it,
// and the kernel releases it when the process exits, however it exits.
//
// FS of a filesystem FS returned is that filesystem.
func FS(fs vfs.FS) vfs.FS {
	if l, ok := fs.(lockingFS); ok {
		return l
	}
	return lockingFS{FS: fs, disk: vfs.Root(fs) == vfs.Default}
}

// ReadOnlyFS is FS for a command that only reads (inspect, verify, dump, a
// dry run): on the disk its Lock never creates a lock file. A LOCK that
// exists is flocked as FS's is; where it is missing (a directory restored
// without it, a store copied without it), the directory that would hold it
// is flocked instead, so that the command leaves every byte and every
// name as it found them. A store's own lock is redundant under its data
// directory's; the data directory's is excluded from writers because Lock
// takes the directory's flock too when it creates or opens LOCK for them.
// On a memory filesystem it is FS.
func ReadOnlyFS(fs vfs.FS) vfs.FS {
	l := FS(fs).(lockingFS)
	l.readOnly = l.disk
	return l
}

// lockingFS is the filesystem FS and ReadOnlyFS return.
type lockingFS struct {
	vfs.FS
	disk     bool // the OS disk: Lock is flock(2)
	readOnly bool // Lock creates no file (only on the disk)
}

// Lock implements vfs.FS. A lock held elsewhere is an error matching
// unix.EWOULDBLOCK (memfs reports EAGAIN, the same errno on Linux).
func (l lockingFS) Lock(name string) (io.Closer, error) {
	switch {
	case !l.disk:
		return l.FS.Lock(name)
	case l.readOnly:
		return flockExisting(name)
	}
	return flockFile(name)
}

// readOnlyFS reports whether fs is a ReadOnlyFS on the disk.
func readOnlyFS(fs vfs.FS) bool {
	l, ok := fs.(lockingFS)
	return ok && l.readOnly
}

// Unwrap implements vfs.FS, so vfs.Root still finds the filesystem
// underneath.
func (l lockingFS) Unwrap() vfs.FS { return l.FS }

func flockFile(name string) (io.Closer, error) {
	f, err := openLockFile(name)
	if err != nil {
		return nil, err
	}
	l, err := LockFile(context.Background(), f, time.Time{}, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// flockExisting flocks the lock file name if it exists, else the directory
// that would hold it; it creates nothing.
func flockExisting(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.Open(filepath.Dir(name))
	}
	if err != nil {
		return nil, err
	}
	l, err := LockFile(context.Background(), f, time.Time{}, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// openLockFile opens name read-only, creating it (mode 0644) if it is
// missing: only a missing lock file needs write access, to its directory.
func openLockFile(name string) (*os.File, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o644)
	}
	return f, err
}

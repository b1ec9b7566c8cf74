package meta

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
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

// lockingFS is the filesystem FS returns.
type lockingFS struct {
	vfs.FS
	disk bool // the OS disk: Lock is flock(2)
}

// Lock implements vfs.FS. A lock held elsewhere is an error matching
// unix.EWOULDBLOCK (memfs reports EAGAIN, the same errno on Linux).
func (l lockingFS) Lock(name string) (io.Closer, error) {
	if !l.disk {
		return l.FS.Lock(name)
	}
	return flockFile(name)
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

// openLockFile opens name read-only, creating it (mode 0644) if it is
// missing: only a missing lock file needs write access, to its directory.
func openLockFile(name string) (*os.File, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o644)
	}
	return f, err
}

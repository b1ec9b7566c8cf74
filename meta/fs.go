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

// WithLockWait is FS(fs) (or the ReadOnlyFS it is) whose locks on the disk
// wait up to wait for a holder to let go, calling onWait (if not nil) once
// with the lock file's path and its holder (LockHolder) when they start
// waiting. Every lock taken through it waits: the data directory's, which
// is the one another process holds, and its stores'.
func WithLockWait(fs vfs.FS, wait time.Duration, onWait func(path, holder string)) vfs.FS {
	l := FS(fs).(lockingFS)
	l.wait = &lockWait{wait: wait, onWait: onWait}
	return l
}

// lockingFS is the filesystem FS and ReadOnlyFS return.
type lockingFS struct {
	vfs.FS
	disk     bool      // the OS disk: Lock is flock(2)
	readOnly bool      // Lock creates no file (only on the disk)
	wait     *lockWait // nil: a held lock fails at once
}

// lockWait is how long a lockingFS's Lock waits, and whom it tells.
type lockWait struct {
	wait   time.Duration
	onWait func(path, holder string)
}

// Lock implements vfs.FS. A lock held elsewhere is an error matching
// unix.EWOULDBLOCK (memfs reports EAGAIN, the same errno on Linux).
func (l lockingFS) Lock(name string) (io.Closer, error) {
	switch {
	case !l.disk:
		return l.FS.Lock(name)
	case l.readOnly:
		return flockExisting(name, l.wait)
	}
	return flockFile(name, l.wait)
}

// readOnlyFS reports whether fs is a ReadOnlyFS on the disk.
func readOnlyFS(fs vfs.FS) bool {
	l, ok := fs.(lockingFS)
	return ok && l.readOnly
}

// Unwrap implements vfs.FS, so vfs.Root still finds the filesystem
// underneath.
func (l lockingFS) Unwrap() vfs.FS { return l.FS }

func flockFile(name string, w *lockWait) (io.Closer, error) {
	f, err := openLockFile(name)
	if err != nil {
		return nil, err
	}
	return flockOpen(f, w)
}

// flockOpen flocks the open file f, waiting as w says (nil: not at all);
// on an error it closes f.
func flockOpen(f *os.File, w *lockWait) (io.Closer, error) {
	var deadline time.Time
	var waiting func()
	if w != nil && w.wait > 0 {
		deadline = time.Now().Add(w.wait)
		told := false
		waiting = func() {
			if !told && w.onWait != nil {
				w.onWait(f.Name(), LockHolder(f))
			}
			told = true
		}
	}
	l, err := LockFile(context.Background(), f, deadline, waiting)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// flockExisting flocks the lock file name if it exists, else the directory
// that would hold it; it creates nothing.
func flockExisting(name string, w *lockWait) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.Open(filepath.Dir(name))
	}
	if err != nil {
		return nil, err
	}
	return flockOpen(f, w)
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

package meta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// LockName is the lock file of a data directory.
const LockName = "LOCK"

// DirLock is a held lock on a directory's LOCK file.
type DirLock struct {
	dir string
	c   io.Closer // nil once unlocked
}

// Lock takes dir's lock without waiting, creating LOCK if it is missing,
// through FS(fs): on the disk an exclusive flock(2), on a memory
// filesystem that filesystem's own lock. If another process, or another
// open in this one, holds it, the error is an *InUseError (ErrInUse).
//
// On the disk a writer also flocks dir itself, which is what a reader
// (fs a ReadOnlyFS) locks when LOCK is missing: it never creates one.
func Lock(fs vfs.FS, dir string) (*DirLock, error) {
	if !readOnlyFS(fs) {
		fs = FS(fs)
	}
	fi, err := fs.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s is not a directory", dir)
	}
	path := fs.PathJoin(dir, LockName)
	c, err := fs.Lock(path)
	if err == nil && !readOnlyFS(fs) && vfs.Root(fs) == vfs.Default {
		c, err = alsoLockDir(c, dir)
	}
	if err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) {
			return nil, &InUseError{Dir: dir, Holder: lockHolderOf(fs, dir)}
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &DirLock{dir: dir, c: c}, nil
}

// alsoLockDir adds a writer's flock of dir itself to its held LOCK c, or
// releases c if dir's is held elsewhere (a reader of a directory that had
// no LOCK).
func alsoLockDir(c io.Closer, dir string) (io.Closer, error) {
	d, err := flockExisting(filepath.Join(dir, "."), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	return bothLocks{c, d}, nil
}

// lockHolderOf says who holds dir's lock: the holder of LOCK's flock, else
// of the directory's (LockHolder), "" when it cannot be told (not on the
// disk, or no /proc/locks).
func lockHolderOf(fs vfs.FS, dir string) string {
	if vfs.Root(fs) != vfs.Default {
		return ""
	}
	for _, p := range []string{filepath.Join(dir, LockName), dir} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		h := LockHolder(f)
		f.Close()
		if h != "another process" {
			return h
		}
	}
	return ""
}

// bothLocks is a writer's two flocks, released together.
type bothLocks [2]io.Closer

func (b bothLocks) Close() error {
	return errors.Join(b[1].Close(), b[0].Close())
}

// Dir is the locked directory.
func (l *DirLock) Dir() string { return l.dir }

// held reports whether the lock is still held by l.
func (l *DirLock) held() bool { return l != nil && l.c != nil }

// Unlock releases the lock. Calling it again does nothing.
func (l *DirLock) Unlock() error {
	if !l.held() {
		return nil
	}
	c := l.c
	l.c = nil
	return c.Close()
}

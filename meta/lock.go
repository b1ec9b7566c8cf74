package meta

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockName is the lock file of a data directory.
const LockName = "LOCK"

// DirLock is a held exclusive flock(2) on a directory's LOCK file.
type DirLock struct {
	dir string
	f   *os.File
}

// Lock takes dir's lock without waiting, creating LOCK (mode 0644) if it
// is missing. If another process, or another open in this one, holds it,
// the error is an *InUseError (ErrInUse).
//
// The lock belongs to the open file, not the process: it is dropped by
// Unlock or when the process exits, however it exits, and is not inherited
// by child processes (Go opens files close-on-exec).
func Lock(dir string) (*DirLock, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s is not a directory", dir)
	}
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &InUseError{Dir: dir}
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &DirLock{dir: dir, f: f}, nil
}

// Dir is the locked directory.
func (l *DirLock) Dir() string { return l.dir }

// Unlock releases the lock. Calling it again does nothing.
func (l *DirLock) Unlock() error {
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Closing the only descriptor of the open file releases the flock; the
	// explicit LOCK_UN makes the release not depend on that.
	uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
	cerr := f.Close()
	if uerr != nil {
		return fmt.Errorf("unlocking %s: %w", filepath.Join(l.dir, LockName), uerr)
	}
	return cerr
}

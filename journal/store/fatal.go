package store

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble gives up in three ways besides returning an error: it calls its
// logger's Fatalf (a MANIFEST write or sync that failed, a commit the
// pipeline could not finish), it panics with the error when a directory
// fsync fails (its atomic marker files: "fsync errors are
// unrecoverable"), and it reports errors of its background work (flushes,
// compactions) to an event listener. Each can happen on the goroutine of
// the call that failed or on one of pebble's own.
//
// The engine's stores use quietLogger, whose Fatalf panics with a
// storeFatal that RecoverStoreFatal turns back into an error. The stores
// reshard builds beside the data and throws away (scratch stores, the new
// stores while StoreWriter fills them) use a fatalTrap instead, which
// never panics: a failure pebble reports on its own is kept, the store's
// owner checks it after every call and reports it, and the whole reshard
// stops before the switch. A failed fsync is therefore never retried by
// fusee: the step fails.

// FatalError is a failure pebble reported through its logger's Fatalf.
// Err is the error pebble passed along, when it passed one (a file
// system error naming the operation and the file, typically).
type FatalError struct {
	Msg string
	Err error
}

func (e *FatalError) Error() string { return e.Msg }
func (e *FatalError) Unwrap() error { return e.Err }

// fatalError builds the FatalError of a Fatalf call.
func fatalError(format string, args ...any) *FatalError {
	e := &FatalError{Msg: fmt.Sprintf("pebble: "+format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
			break
		}
	}
	return e
}

// ioFailure reports whether err is the file system failing (an operation
// on a file that the operating system refused: no space, an I/O error, a
// permission), rather than pebble finding something wrong.
func ioFailure(err error) bool {
	var pe *iofs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno)
}

// fatalTrap is the pebble logger and background error sink of a store
// reshard builds: it keeps the first failure and never panics.
type fatalTrap struct {
	quietLogger
	mu  sync.Mutex
	err error
}

func (t *fatalTrap) Fatalf(format string, args ...any) { t.fail(fatalError(format, args...)) }

func (t *fatalTrap) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
}

// Err is the first failure pebble reported on its own, nil if none.
func (t *fatalTrap) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// install makes t o's logger and background error sink.
func (t *fatalTrap) install(o *pebble.Options) {
	o.Logger = t
	o.EventListener.BackgroundError = t.fail
}

// openTrappedStore creates the store at path for StoreWriter, as
// OpenStore does, with trap as its logger and no write-ahead log: the
// store is only ever written by ingesting tables, and pebble panics when
// closing a write-ahead log fails (pebble's db.go, rotateWAL), which a Flush does.
// The engine opens the finished store with a log of its own.
func openTrappedStore(fs vfs.FS, path string, trap *fatalTrap) (_ *pebble.DB, err error) {
	defer RecoverStoreFatal(path, &err)
	o := StoreOptions(fs, nil, false, true)
	o.DisableWAL = true
	trap.install(o)
	db, err := openPebble(path, o)
	if err == nil {
		if err = trap.Err(); err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		return nil, WrapStoreError(path, "creating", err)
	}
	return db, nil
}

// ScratchStore is a store OpenScratchStore made. After any call, Failed
// says whether pebble gave up on its own meanwhile (on any goroutine);
// once it has, nothing the store returns is to be trusted.
type ScratchStore struct {
	*pebble.DB
	path string
	trap *fatalTrap
}

// Failed is the first failure pebble reported outside a returned error
// (Fatalf, a background error), naming the store; nil if none.
func (s *ScratchStore) Failed() error {
	if err := s.trap.Err(); err != nil {
		return fmt.Errorf("scratch store %s: %w", s.path, err)
	}
	return nil
}

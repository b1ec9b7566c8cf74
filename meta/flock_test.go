package meta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile excludes a second open of the same file, waits until its
// deadline calling waiting while the lock is held, takes the lock once the
// holder lets go, stops when ctx is done, and LockHolder names the holder.
func TestLockFileWaitsAndGivesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	held, err := LockFile(context.Background(), open(), time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// No deadline: one try.
	calls := 0
	f := open()
	if _, err := LockFile(context.Background(), f, time.Time{}, func() { calls++ }); !errors.Is(err, unix.EWOULDBLOCK) || calls != 1 {
		t.Fatalf("a try on a held lock: %v, waiting called %d times; want EWOULDBLOCK, once", err, calls)
	}
	if h, want := LockHolder(f), fmt.Sprintf("pid %d (", os.Getpid()); !strings.HasPrefix(h, want) {
		t.Errorf("LockHolder = %q, want %q...", h, want)
	}

	// A deadline: waits that long, then the same error.
	calls = 0
	start := time.Now()
	if _, err := LockFile(context.Background(), f, start.Add(80*time.Millisecond), func() { calls++ }); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("waiting on a held lock: %v", err)
	}
	if d := time.Since(start); d < 80*time.Millisecond || calls < 2 {
		t.Errorf("gave up after %s and %d tries; want at least 80ms and several", d, calls)
	}

	// ctx done while waiting: ctx's error, soon.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := LockFile(ctx, f, start.Add(time.Minute), nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled wait: %v after %s", err, time.Since(start))
	}

	// Released while a waiter waits: the waiter gets it.
	go func() {
		time.Sleep(40 * time.Millisecond)
		held.Close()
	}()
	got, err := LockFile(context.Background(), f, time.Now().Add(time.Minute), nil)
	if err != nil {
		t.Fatalf("waiter after release: %v", err)
	}
	if err := got.Close(); err != nil {
		t.Fatal(err)
	}
	if err := got.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lock file beside the locked file: %v", err)
	}
}

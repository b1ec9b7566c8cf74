package meta

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

func TestLockExcludes(t *testing.T) {
	dir := t.TempDir()
	l, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if l.Dir() != dir {
		t.Errorf("Dir() = %s, want %s", l.Dir(), dir)
	}
	_, err = Lock(vfs.Default, dir)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Lock = %v, want ErrInUse", err)
	}
	// The holder, from /proc/locks, is this process.
	want := fmt.Sprintf("%s is in use by pid %d (%s", dir, os.Getpid(), os.Args[0][:min(len(os.Args[0]), 30)])
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); stop it and retry") {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	var iu *InUseError
	if !errors.As(err, &iu) || iu.Dir != dir {
		t.Errorf("error %#v is not an *InUseError for %s", err, dir)
	}
	// Every opener is kept out too.
	if _, err := Create(vfs.Default, dir, local8, nil); !errors.Is(err, ErrInUse) {
		t.Errorf("Create while locked = %v, want ErrInUse", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	l2, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	l2.Unlock()
}

func TestOpenHoldsLock(t *testing.T) {
	dir := newDir(t, local8)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(vfs.Default, dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Errorf("second Open = %v, want ErrInUse", err)
	}
	d.Close()
	d, err = Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	d.Close()
}

func TestLockCreatesFile(t *testing.T) {
	dir := t.TempDir()
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	l, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	fi, err := os.Stat(filepath.Join(dir, LockName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o644 {
		t.Errorf("LOCK mode = %v, want -rw-r--r--", fi.Mode())
	}
}

func TestLockMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	_, err := Lock(vfs.Default, dir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lock(vfs.Default, missing) = %v, want fs.ErrNotExist", err)
	}
	if want := "data directory " + dir + ": stat " + dir + ": no such file or directory"; err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if _, err := Open(vfs.Default, dir, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(vfs.Default, missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestLockNotADir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Lock(vfs.Default, file)
	if want := "data directory " + file + " is not a directory"; err == nil || err.Error() != want {
		t.Errorf("Lock(vfs.Default, file) = %v, want %s", err, want)
	}
}

func flockPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	return p
}

// TestLockSeenByOtherProcess: while the lock is held, `flock -n LOCK true`
// in another process fails; after Unlock it succeeds.
func TestLockSeenByOtherProcess(t *testing.T) {
	flock := flockPath(t)
	dir := newDir(t, local8)
	lockFile := filepath.Join(dir, LockName)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = exec.Command(flock, "-n", lockFile, "true").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("flock -n while held: %v, want exit status 1", err)
	}
	d.Close()
	if err := exec.Command(flock, "-n", lockFile, "true").Run(); err != nil {
		t.Errorf("flock -n after Close: %v, want success", err)
	}
}

// TestLockHeldByOtherProcess: a lock another process holds keeps every
// opener out until that process lets go.
func TestLockHeldByOtherProcess(t *testing.T) {
	flock := flockPath(t)
	dir := newDir(t, local8)
	cmd := exec.Command(flock, "-n", filepath.Join(dir, LockName), "sh", "-c", "echo held; exec cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("flock holder said %q, %v", line, err)
	}
	if _, err := Open(vfs.Default, dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Errorf("Open while another process holds the lock = %v, want ErrInUse", err)
	}
	if _, err := Lock(vfs.Default, dir); !errors.Is(err, ErrInUse) {
		t.Errorf("Lock while another process holds the lock = %v, want ErrInUse", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flock holder: %v", err)
	}
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatalf("Open after the other process exited: %v", err)
	}
	d.Close()
}

// TestFSLockIsFlock: on the disk, FS(vfs.Default).Lock, the lock pebble
// takes on each store's LOCK when opened through FS, is a flock(2) lock
// that flock(1) sees, and opening an existing lock file changes nothing
// in it.
func TestFSLockIsFlock(t *testing.T) {
	flock := flockPath(t)
	name := filepath.Join(t.TempDir(), "LOCK")
	if err := os.WriteFile(name, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := FS(vfs.Default)
	if FS(fs) != fs {
		t.Error("FS(FS(x)) is not FS(x)")
	}
	if vfs.Root(fs) != vfs.Default {
		t.Error("vfs.Root(FS(vfs.Default)) is not vfs.Default")
	}
	l, err := fs.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Lock(name); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("second Lock in the same process = %v, want EWOULDBLOCK", err)
	}
	err = exec.Command(flock, "-n", name, "true").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("flock -n while held: %v, want exit status 1", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(flock, "-n", name, "true").Run(); err != nil {
		t.Errorf("flock -n after Close: %v, want success", err)
	}
	if got := readFile(t, name); got != "kept" {
		t.Errorf("the lock file holds %q after the lock, want it untouched", got)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode() != 0o600 {
		t.Errorf("the lock file's mode is %v (%v), want it untouched", fi.Mode(), err)
	}
}

// TestLockReadOnly: a directory the caller may only read can still be
// locked when its LOCK exists, so read-only commands need no write access.
func TestLockReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := newDir(t, local8)
	if err := os.Chmod(filepath.Join(dir, LockName), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatalf("Open of a read-only directory: %v", err)
	}
	if _, err := Open(vfs.Default, dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Errorf("second Open = %v, want ErrInUse", err)
	}
	d.Close()
}

// A reader's lock (ReadOnlyFS) creates no LOCK: where it is missing it
// locks the directory itself, and a writer, which locks LOCK and the
// directory, is kept out as the reader is kept out by it.
func TestReadOnlyLockCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	r, err := Lock(ReadOnlyFS(vfs.Default), dir)
	if err != nil {
		t.Fatalf("reader's Lock: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the reader's lock created %s (%v)", LockName, err)
	}
	if _, err := Lock(vfs.Default, dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("writer's Lock under a reader = %v, want ErrInUse", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); err != nil {
		t.Logf("the refused writer left no LOCK either")
	}
	r.Unlock()
	w, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatalf("writer's Lock: %v", err)
	}
	os.Remove(filepath.Join(dir, LockName)) // a writer's LOCK deleted under it
	if _, err := Lock(ReadOnlyFS(vfs.Default), dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("reader's Lock under a writer whose LOCK is gone = %v, want ErrInUse", err)
	}
	w.Unlock()
}

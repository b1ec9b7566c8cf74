package store

import (
	"errors"
	iofs "io/fs"
	"strings"
	"syscall"
	"testing"
)

// A Fatalf or a panic caused by the file system failing comes back as that
// failure (naming the operation and the file), not as damage; a
// fatalTrap keeps the first failure and never panics.
func TestFatalFromFileSystem(t *testing.T) {
	sync := &iofs.PathError{Op: "sync", Path: "/s/MANIFEST-000001", Err: syscall.EIO}
	viaFatalf := func() (err error) {
		defer RecoverStoreFatal("/s", &err)
		quietLogger{}.Fatalf("MANIFEST sync failed: %v", sync)
		return nil
	}
	viaPanic := func() (err error) {
		defer RecoverStoreFatal("/s", &err)
		panic(sync)
	}
	for name, f := range map[string]func() error{"Fatalf": viaFatalf, "panic": viaPanic} {
		err := f()
		var ce *StoreCorruptionError
		if !errors.Is(err, syscall.EIO) || errors.As(err, &ce) || !strings.Contains(err.Error(), "sync /s/MANIFEST-000001") {
			t.Errorf("%s: %v, want the sync failure, not corruption", name, err)
		}
	}
	trap := &fatalTrap{}
	trap.Fatalf("MANIFEST sync failed: %v", sync)
	trap.Fatalf("later: %d", 2)
	if err := trap.Err(); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "pebble: MANIFEST sync failed") {
		t.Errorf("trap: %v, want the first failure", err)
	}
}

// Only pebble's Fatalf is turned into an error; other panics go on.
func TestRecoverStoreFatal(t *testing.T) {
	f := func() (err error) {
		defer RecoverStoreFatal("/s", &err)
		quietLogger{}.Fatalf("boom %d", 1)
		return nil
	}
	var ce *StoreCorruptionError
	if err := f(); !errors.As(err, &ce) || ce.Path != "/s" || !strings.Contains(err.Error(), "pebble: boom 1") {
		t.Fatalf("Fatalf: %v", err)
	}
	defer func() {
		if r := recover(); r != "other" {
			t.Fatalf("recovered %v, want the other panic", r)
		}
	}()
	func() {
		var err error
		defer RecoverStoreFatal("/s", &err)
		panic("other")
	}()
}

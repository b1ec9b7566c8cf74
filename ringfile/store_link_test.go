package ringfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A ring file reached through a symbolic link is one file: a write through
// the link replaces the target and leaves the link a link, and it locks
// the target, so writers using either name exclude each other.
func TestUpdateThroughASymlinkWritesTheTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "orders.ring")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Create(target, newPolicy(t, "orders", 4, "a", "b"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.ring")
	if err := os.Symlink("real/orders.ring", link); err != nil {
		t.Fatal(err)
	}
	next, err := Update(link, WriteOptions{ExpectRevision: 1}, func(cur *Policy) (*Policy, error) {
		return OpenEpoch(cur, EvenRing(4, []string{"b", "a"}), ShardChange{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a symbolic link (%v)", err)
	}
	viaTarget, err := LoadValid(target)
	if err != nil {
		t.Fatal(err)
	}
	if viaTarget.Revision != next.Revision || viaTarget.Current != 1 {
		t.Fatalf("target at revision %d epoch %d, want the write's %d, 1", viaTarget.Revision, viaTarget.Current, next.Revision)
	}
	// The target itself is locked: no lock file beside it or the link.
	for _, lock := range []string{target + ".lock", link + ".lock"} {
		if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a lock file %s was made: %v", lock, err)
		}
	}
	// The link's name now expects the new revision, like the target's.
	_, err = Update(link, WriteOptions{ExpectRevision: 1}, func(cur *Policy) (*Policy, error) { return cur, nil })
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale expectation through the link: %v, want a conflict", err)
	}
}

func TestCreateThroughADanglingSymlinkCreatesTheTarget(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link.ring")
	if err := os.Symlink("orders.ring", link); err != nil {
		t.Fatal(err)
	}
	if err := Create(link, newPolicy(t, "orders", 4, "a"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced (%v)", err)
	}
	if _, err := LoadValid(filepath.Join(dir, "orders.ring")); err != nil {
		t.Fatal(err)
	}
	if err := Create(link, newPolicy(t, "orders", 4, "a"), WriteOptions{}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("create over the link's existing target: %v", err)
	}
}

func TestLockWaitStopsOnCancel(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 4, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = withLock(context.Background(), path, WriteOptions{}, func() error { close(held); <-release; return nil })
	}()
	<-held
	defer close(release)
	cancel()
	_, err := UpdateContext(ctx, path, WriteOptions{ExpectRevision: AnyRevision}, func(cur *Policy) (*Policy, error) { return cur, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for the lock after cancel: %v", err)
	}
}

package ringfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A write that finds the file locked says who holds the lock (OnWait, once),
// waits LockWait and gives up with a *LockedError (ErrLocked); a dry run
// takes no lock and goes through; no write leaves a FILE.lock behind.
func TestLockWaitSaysWhoAndGivesUp(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 4, "a"))
	open := func(cur *Policy) (*Policy, error) {
		return OpenEpoch(cur, EvenRing(4, []string{"a", "b"}), ShardChange{})
	}

	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var holders []string
	start := time.Now()
	_, err = Update(path, WriteOptions{ExpectRevision: AnyRevision, LockWait: 150 * time.Millisecond,
		OnWait: func(h string) { holders = append(holders, h) }}, open)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("Update of a locked file: %v after %s", err, time.Since(start))
	}
	pid := fmt.Sprintf("pid %d (", os.Getpid())
	if len(holders) != 1 || !strings.HasPrefix(holders[0], pid) || !strings.HasPrefix(le.Holder, pid) {
		t.Errorf("holder: OnWait got %q, the error says %q; want %q...", holders, le.Holder, pid)
	}
	if _, err := Update(path, WriteOptions{ExpectRevision: AnyRevision, DryRun: true, LockWait: time.Millisecond}, open); err != nil {
		t.Errorf("a dry run waited for the lock: %v", err)
	}
	held.Close()

	if _, err := Update(path, WriteOptions{ExpectRevision: AnyRevision}, open); err != nil {
		t.Fatal(err)
	}
	dry := filepath.Join(filepath.Dir(path), "new.ring")
	if err := Create(dry, newPolicy(t, "orders", 4, "a"), WriteOptions{ExpectRevision: AnyRevision, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 || entries[0].Name() != "orders.ring" {
		t.Errorf("after writes and a dry-run create the directory holds %v, want only orders.ring", entries)
	}
}

// A waiter that gets the lock on a file another writer has since replaced
// locks the new file instead: it never writes under a stale lock.
func TestLockFollowsAReplacedFile(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 4, "a"))
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := Update(path, WriteOptions{ExpectRevision: 2}, func(cur *Policy) (*Policy, error) {
			return OpenEpoch(cur, EvenRing(4, []string{"b"}), ShardChange{})
		})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	// The holder writes revision 2 by replacing the file, then releases
	// the lock on the old one.
	next, err := OpenEpoch(mustLoad(t, path), EvenRing(4, []string{"a", "b"}), ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDurably(path, Format(next)); err != nil {
		t.Fatal(err)
	}
	held.Close()
	if err := <-done; err != nil {
		t.Fatalf("the waiter, expecting revision 2: %v", err)
	}
	if p := mustLoad(t, path); p.Revision != 3 {
		t.Errorf("revision %d, want 3", p.Revision)
	}
}

func mustLoad(t *testing.T, path string) *Policy {
	t.Helper()
	p, err := LoadValid(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A write killed at write, fsync, link or rename leaves ".FILE.tmp…" beside
// FILE (createDurably's ".FILE.tmp-N", meta.ReplaceFile's ".FILE.tmpN"):
// the next write removes them under the lock, the next create once its
// file exists; a dry run removes nothing, and other files' temporaries
// are not touched.
func TestWritesRemoveStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.ring")
	stale := []string{".orders.ring.tmp-123", ".orders.ring.tmp3k9x"}
	other := ".other.ring.tmp-1"
	litter := func() {
		for _, name := range append(stale, other) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := func(when string, want ...string) {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the directory holds %v, want %v", when, got, want)
		}
	}
	litter()
	if err := Create(path, newPolicy(t, "orders", 4, "a"), WriteOptions{ExpectRevision: AnyRevision}); err != nil {
		t.Fatal(err)
	}
	left("after create", other, "orders.ring")
	litter()
	open := func(cur *Policy) (*Policy, error) {
		return OpenEpoch(cur, EvenRing(4, []string{"a", "b"}), ShardChange{})
	}
	if _, err := Update(path, WriteOptions{ExpectRevision: AnyRevision, DryRun: true}, open); err != nil {
		t.Fatal(err)
	}
	left("after a dry run", append([]string{}, stale[0], stale[1], other, "orders.ring")...)
	if _, err := Update(path, WriteOptions{ExpectRevision: AnyRevision}, open); err != nil {
		t.Fatal(err)
	}
	left("after an update", other, "orders.ring")
}

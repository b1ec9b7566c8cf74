package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Ring writes leave no FILE.lock, a dry run takes no lock, and a write that
// finds the file locked says who it waits for, gives up after
// --lock-timeout and exits 3.
func TestRingWriteLock(t *testing.T) {
	dir := t.TempDir()
	ring := filepath.Join(dir, "o.ring")
	if _, errOut, code := runFusee(t, nil, "ring", "init", ring, "--namespace", "o", "--shards", "4", "--cells", "a,b", "--dry-run"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "init", ring, "--namespace", "o", "--shards", "4", "--cells", "a,b"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "open-epoch", ring, "--slots", "0-3=a", "--dry-run"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "open-epoch", ring, "--slots", "0-3=b"); code != 0 {
		t.Fatal(errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after writes and dry runs the directory holds %d entries, want only o.ring", len(entries))
	}

	held, err := os.Open(ring)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runFusee(t, nil, "ring", "open-epoch", ring, "--slots", "0-3=a", "--lock-timeout", "200ms")
	wait := fmt.Sprintf("waiting for %s: locked by pid %d (", ring, os.Getpid())
	if code != ExitInUse || !strings.HasPrefix(errOut, wait) || !strings.Contains(errOut, "; giving up after 200ms (--lock-timeout)\n") ||
		!strings.Contains(errOut, "fusee: "+ring+" is locked by pid") {
		t.Errorf("open-epoch of a locked file: exit %d, want %d\n%s", code, ExitInUse, errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "open-epoch", ring, "--slots", "0-3=a", "--dry-run", "--lock-timeout", "1ms"); code != 0 {
		t.Errorf("a dry run waited for the lock: exit %d\n%s", code, errOut)
	}
}

package journal

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// TestStoreLocksAreFlock: while a directory is open, read-write or
// read-only, each shard store's own LOCK is held with flock(2), the lock
// docs/format.md §3 specifies, not with pebble's fcntl lock, which flock
// would not see.
func TestStoreLocksAreFlock(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	dir := filepath.Join(t.TempDir(), "d")
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	held := func(what string, want bool) {
		t.Helper()
		for _, name := range []string{filepath.Join(dir, "LOCK"), filepath.Join(store.StoreDir(vfs.Default, dir, 1), "LOCK")} {
			err := exec.Command(flock, "-n", name, "true").Run()
			var ee *exec.ExitError
			if got := errors.As(err, &ee) && ee.ExitCode() == 1; got != want {
				t.Errorf("%s: flock -n %s: %v, want held=%v", what, name, err, want)
			}
		}
	}
	held("created", true)
	must(t, db.Close())
	held("closed", false)
	for _, ro := range []bool{false, true} {
		db, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: ro})
		must(t, err)
		held("open", true)
		must(t, db.Close())
	}
}

// TestOpenReadOnlyWithoutWriteAccess: a read-only open needs only read
// access to a directory whose LOCK files exist.
func TestOpenReadOnlyWithoutWriteAccess(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := filepath.Join(t.TempDir(), "d")
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 2})
	must(t, err)
	must(t, db.Close())
	chmodAll := func(dirMode, fileMode fs.FileMode) {
		t.Helper()
		must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.Chmod(p, dirMode)
			}
			return os.Chmod(p, fileMode)
		}))
	}
	chmodAll(0o555, 0o444)
	defer chmodAll(0o755, 0o644)
	db, _, err = Open(vfs.Default, dir, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open without write access: %v", err)
	}
	must(t, db.Close())
}

package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// corruptStoreTable flips 8 bytes in the middle of an sstable of shard
// shard's store and returns the store directory and the file's name.
func corruptStoreTable(t *testing.T, dir string, shard int) (string, string) {
	t.Helper()
	sdir := store.StoreDir(vfs.Default, dir, shard)
	tables, err := filepath.Glob(filepath.Join(sdir, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no sstables in %s (%v)", sdir, err)
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+8; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(tables[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	return sdir, filepath.Base(tables[0])
}

// A shard store whose sstable fails its checksum is a clean
// *StoreCorruptionError from Open and RecoverShard, naming the store and
// the file: pebble's fatal corruption handling must not panic.
func TestOpenCorruptStoreTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 2, Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	sdir, file := corruptStoreTable(t, dir, 1)

	check := func(what string, err error) {
		t.Helper()
		var ce *store.StoreCorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v (%T), want a *StoreCorruptionError", what, err, err)
		}
		if ce.Path != sdir || ce.File != file {
			t.Errorf("%s: error names %q file %q, want %q file %q", what, ce.Path, ce.File, sdir, file)
		}
		msg := err.Error()
		for _, want := range []string{sdir, file, "the shard store is damaged; restore the directory from a backup"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q does not contain %q", what, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: message has more than one line: %q", what, msg)
		}
	}
	for _, ro := range []bool{true, false} {
		db, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: ro})
		if err == nil {
			db.Close()
		}
		check("Open", err)
	}
	_, _, _, err = RecoverShard(vfs.Default, dir, 1, 2)
	check("RecoverShard", err)
	// The lock was released: the intact shard still recovers.
	if _, _, _, err := RecoverShard(vfs.Default, dir, 0, 2); err != nil {
		t.Fatalf("RecoverShard of the intact shard: %v", err)
	}
}

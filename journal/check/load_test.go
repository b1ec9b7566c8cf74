package check

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/meta"
)

// writeDir replays a world's ops into a real data directory in batches,
// checkpointing once halfway so that the directory has both checkpointed
// state and a log tail.
func writeDir(t *testing.T, w *world, dir string) {
	t.Helper()
	db, err := journal.Create(vfs.Default, dir, journal.CreateOptions{Shards: w.n, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(w.log); i += 7 {
		if err := db.Commit(w.log[i:min(i+7, len(w.log))]); err != nil {
			t.Fatal(err)
		}
		if i/7 == len(w.log)/14 {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// treeHash hashes every file's path and bytes under dir.
func treeHash(t *testing.T, dir string) [32]byte {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// A real directory loads read-only to the state that was written, verifies
// clean, dumps like the in-memory state, and is not changed by any of it.
func TestLoadRealDirectory(t *testing.T) {
	w := newWorld(t, 3, 0)
	newDriver(5, w).steps(300)
	dir := filepath.Join(t.TempDir(), "data")
	writeDir(t, w, dir)
	before := treeHash(t, dir)

	st, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if fs := Verify(st); len(fs) != 0 {
		t.Fatalf("findings on a directory written by the engine:\n%s", findingLines(fs))
	}
	var a, b bytes.Buffer
	if err := WriteLogicalDump(&a, st.Shards); err != nil {
		t.Fatal(err)
	}
	if err := WriteLogicalDump(&b, w.shards); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("the loaded state dumps differently from the one written: %s", firstDiff(b.String(), a.String()))
	}
	sum := Inspect(st)
	if sum.ShardCount != 3 || sum.LogFormat != meta.LogShared || sum.Format != meta.FormatLocal {
		t.Errorf("summary meta: %+v", sum)
	}
	if sum.Total.TailEntries <= 0 || sum.Total.TailBytes <= 0 || sum.LogBytes <= 0 || sum.Total.StoreBytes <= 0 {
		t.Errorf("summary sizes: tail %d entries %d bytes, log %d bytes, stores %d bytes",
			sum.Total.TailEntries, sum.Total.TailBytes, sum.LogBytes, sum.Total.StoreBytes)
	}
	if sum.Total.Runs != st.Runs() || sum.Oldest == nil || sum.Newest == nil {
		t.Errorf("summary runs: %+v", sum.Total)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatal("loading, verifying and dumping changed the directory's bytes")
	}
}

// Load refuses a directory another process holds, with meta's typed error.
func TestLoadInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db, err := journal.Create(vfs.Default, dir, journal.CreateOptions{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Load(vfs.Default, dir); !errors.Is(err, meta.ErrInUse) {
		t.Fatalf("Load of a directory in use: %v, want ErrInUse", err)
	}
}

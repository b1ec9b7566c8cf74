package journal

import (
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"
)

// TestBuildStoresEqualOrdinary: a directory built (CreateOptions.Build:
// its stores in the build layout until Close) by an evicting DB, which
// reads runs, run entries and the histories of runs tombstoned while
// evicted back from that layout, closes to stores holding exactly the
// keys and values of a directory that committed and checkpointed the
// same ops the ordinary way, and recovers to the same state.
func TestBuildStoresEqualOrdinary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		plain, err := Create(fs, "/plain", CreateOptions{Shards: shards, Now: 100, NoSync: true})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		// Either sizes (BuildRuns past LargeBuildRuns: the larger) build
		// the same stores.
		runs := rapid.SampledFrom([]int{0, LargeBuildRuns + 1}).Draw(t, "buildRuns")
		built, err := Create(fs, "/built", CreateOptions{Shards: shards, Now: 100, Build: true, BuildRuns: runs})
		if err != nil {
			t.Fatalf("Create (build): %v", err)
		}
		built.SetEvict()
		w := newWorkload(shards)
		for range rapid.IntRange(0, 80).Draw(t, "batches") {
			ops := w.batch(t, 6)
			for _, db := range []*DB{plain, built} {
				if err := db.Commit(slices.Clone(ops)); err != nil {
					t.Fatalf("Commit (build %v): %v", db.build, err)
				}
				db.SetNow(w.time)
			}
			if rapid.IntRange(0, 4).Draw(t, "checkpoint") == 0 {
				for _, db := range []*DB{plain, built} {
					if err := db.Checkpoint(); err != nil {
						t.Fatalf("Checkpoint (build %v): %v", db.build, err)
					}
				}
			}
		}
		for _, db := range []*DB{plain, built} {
			if err := db.Close(); err != nil {
				t.Fatalf("Close (build %v): %v", db.build, err)
			}
		}
		want := reopenDumps(t, fs, "/plain", shards)
		got := reopenDumps(t, fs, "/built", shards)
		for i := range shards {
			if got[i] != want[i] {
				t.Fatalf("shard %d: the built store differs from the ordinary one:\n%s\nvs\n%s", i, got[i], want[i])
			}
		}
		db, _, err := Open(fs, "/built", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer db.Close()
		checkShardsEqual(t, "built directory recovered vs model", db.Shards, w.model)
	})
}

// reopenDumps opens the closed directory dir read-only and dumps each
// store's keys and values.
func reopenDumps(t *rapid.T, fs vfs.FS, dir string, shards int) []string {
	db, _, err := Open(fs, dir, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open %s: %v", dir, err)
	}
	defer db.Close()
	dumps := make([]string, shards)
	for i := range shards {
		dumps[i] = storeDump(t, db, i)
	}
	return dumps
}

// TestBuildSizesByRuns: a directory built to hold more than
// LargeBuildRuns runs gets the larger cache and memtables, one of up to
// that many (or of an unknown count) the smaller.
func TestBuildSizesByRuns(t *testing.T) {
	const shards = 8
	for _, c := range []struct {
		runs          int
		cache, memtab int64
	}{
		{0, buildCacheSize, buildMemtables / shards},
		{LargeBuildRuns, buildCacheSize, buildMemtables / shards},
		{LargeBuildRuns + 1, largeBuildCacheSize, largeBuildMemtables / shards},
	} {
		db, err := Create(vfs.NewMem(), "/d", CreateOptions{Shards: shards, Now: 100, Build: true, BuildRuns: c.runs})
		if err != nil {
			t.Fatal(err)
		}
		want := c.cache + 2*shards*c.memtab
		if got := db.cache.MaxSize(); got != want {
			t.Errorf("%d runs: cache %d MiB, want %d", c.runs, got>>20, want>>20)
		}
		if got := db.buildSizes.memTableSize(shards); got != uint64(c.memtab) {
			t.Errorf("%d runs: memtable %d bytes, want %d", c.runs, got, c.memtab)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package sim

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/journal"
)

// openState recovers a closed directory read-only and returns its shards.
func openState(t testing.TB, dir string) []*journal.Shard {
	t.Helper()
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer db.Close()
	return db.Shards
}

func genDir(t testing.TB, o GenOptions) (string, *GenReport) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	rep, err := Generate(context.Background(), vfs.Default, dir, o)
	if err != nil {
		t.Fatalf("gen: %v", err)
	}
	return dir, rep
}

// TestDirOracle runs the oracle on real directories: gen with 3 and 8
// shards, recover, drive each (reopened by Drive), recover again. Both
// must equal each other and what the engine reaches on in-memory shards.
func TestDirOracle(t *testing.T) {
	o := GenOptions{Runs: 600, Seed: 42}
	o.Shards = 3
	d3, _ := genDir(t, o)
	o.Shards = 8
	d8, _ := genDir(t, o)
	_, mem := genMem(t, o)

	want := logical(t, mem.sh)
	sameCanon(t, "gen: memory vs 3-shard directory", want, logical(t, openState(t, d3)))
	sameCanon(t, "gen: memory vs 8-shard directory", want, logical(t, openState(t, d8)))

	for _, d := range []string{d3, d8} {
		rep, err := Drive(context.Background(), vfs.Default, d, DriveOptions{NoSync: true})
		if err != nil {
			t.Fatalf("drive %s: %v", d, err)
		}
		if n := rep.Census.States["running"] + rep.Census.States["parked"]; n != 0 {
			t.Fatalf("drive %s left %d runs unfinished", d, n)
		}
	}
	driveBackend(t, mem, Config{})
	want = logical(t, mem.sh)
	sameCanon(t, "driven: memory vs 3-shard directory", want, logical(t, openState(t, d3)))
	sameCanon(t, "driven: memory vs 8-shard directory", want, logical(t, openState(t, d8)))
}

// TestGenSameSeed: two gens with one seed hold identical journal states,
// and identical files.
func TestGenSameSeed(t *testing.T) {
	o := GenOptions{Shards: 4, Runs: 500, Seed: 7}
	a, _ := genDir(t, o)
	b, _ := genDir(t, o)
	sameCanon(t, "same seed", logical(t, openState(t, a)), logical(t, openState(t, b)))
	fa, fb := readTree(t, a), readTree(t, b)
	var names []string
	for n := range fa {
		names = append(names, n)
	}
	for n := range fb {
		if _, ok := fa[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var differ []string
	for _, n := range names {
		if !bytes.Equal(fa[n], fb[n]) {
			differ = append(differ, n)
		}
	}
	if len(differ) > 0 {
		t.Logf("files that differ between two gens with one seed: %q", differ)
	}
}

func readTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var walk func(string)
	walk = func(d string) {
		names, err := vfs.Default.List(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := filepath.Join(d, n)
			st, err := vfs.Default.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.IsDir() {
				walk(p)
				continue
			}
			f, err := vfs.Default.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = b
		}
	}
	walk(dir)
	return out
}

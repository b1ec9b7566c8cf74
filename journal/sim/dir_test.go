package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// openState recovers a closed directory read-only and returns its shards.
func openState(t testing.TB, dir string) []*model.Shard {
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
// byte-identical fusee.meta and wal/ files (the log ID is derived from the
// options), and stores with identical keys and values. Pebble's own files
// are not compared: its MANIFEST records each table's wall-clock creation
// time, and its flushes and compactions run in the background, so file
// numbers and table boundaries may depend on timing (docs/simulator.md);
// the test logs which of them differed. Another seed writes another log.
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
	var logged, walFiles []string
	for _, n := range names {
		pebbleFile := strings.HasPrefix(n, "shards"+string(filepath.Separator))
		if n == "LOCK" || strings.HasSuffix(n, string(filepath.Separator)+"LOCK") {
			continue // empty lock files (pebble's and ours)
		}
		if !pebbleFile && strings.HasPrefix(n, "wal"+string(filepath.Separator)) {
			walFiles = append(walFiles, n)
		}
		if bytes.Equal(fa[n], fb[n]) {
			continue
		}
		_, inA := fa[n]
		_, inB := fb[n]
		switch {
		case pebbleFile:
			logged = append(logged, n)
		case !inA || !inB:
			t.Errorf("%s is in only one of the two directories", n)
		default:
			t.Errorf("%s differs between two gens with one seed", n)
		}
	}
	if len(walFiles) == 0 || fa["fusee.meta"] == nil {
		t.Fatalf("no wal segments (%q) or no fusee.meta compared", walFiles)
	}
	if len(logged) > 0 {
		t.Logf("pebble files that differ (not compared): %q", logged)
	}
	if sa, sb := storeContents(t, a), storeContents(t, b); sa != sb {
		t.Errorf("the stores' keys and values differ between two gens with one seed")
	}

	o.Seed = 8
	c, _ := genDir(t, o)
	if bytes.Equal(fa[walFiles[0]], readTree(t, c)[walFiles[0]]) {
		t.Errorf("seeds 7 and 8 wrote the same %s", walFiles[0])
	}
}

// storeContents renders every key and value of every shard store of a
// closed directory, in order.
func storeContents(t testing.TB, dir string) string {
	t.Helper()
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer db.Close()
	var b strings.Builder
	for i := range db.Shards {
		err := db.StoreKeys(i, func(k, v []byte) error {
			fmt.Fprintf(&b, "%d %x %x\n", i, k, v)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
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

// TestEvictSpillOracle: an engine that keeps almost nothing in memory —
// a checkpoint (which evicts every run) whenever more than a few dozen
// runs are resident, event queues that spill past a few dozen events —
// reaches the same logical state, generating and driving, as the engine
// on in-memory shards.
func TestEvictSpillOracle(t *testing.T) {
	for _, seed := range testtier.Subset(t, []uint64{3, 11}, 2) { // one a day in the quick tier
		o := GenOptions{Runs: 700, Seed: seed, Shards: 3}
		_, mem := genMem(t, o)
		o.Config.MaxResident = 25
		o.spillAt = 40
		d, rep := genDir(t, o)
		if rep.Stats.Checkpoints < 10 {
			t.Fatalf("seed %d: only %d checkpoints: eviction was hardly exercised", seed, rep.Stats.Checkpoints)
		}
		want := logical(t, mem.sh)
		sameCanon(t, "gen: memory vs evicting directory", want, logical(t, openState(t, d)))
		if got := TakeCensus(mem.sh); fmt.Sprint(got) != fmt.Sprint(rep.Census) {
			t.Fatalf("seed %d: census of the directory %+v, of memory %+v", seed, rep.Census, got)
		}
		if _, err := Drive(context.Background(), vfs.Default, d, DriveOptions{NoSync: true,
			Config: Config{MaxResident: 25}, spillAt: 40}); err != nil {
			t.Fatalf("drive: %v", err)
		}
		driveBackend(t, mem, Config{})
		sameCanon(t, "driven: memory vs evicting directory", logical(t, mem.sh), logical(t, openState(t, d)))
	}
}

// TestGenNoCensus: NoCensus leaves the report's census out and changes
// nothing in the directory (its census, read afterwards, is the one a gen
// with the census reports).
func TestGenNoCensus(t *testing.T) {
	o := GenOptions{Shards: 3, Runs: 300, Seed: 5}
	_, with := genDir(t, o)
	o.NoCensus = true
	dir, without := genDir(t, o)
	if without.Census != nil {
		t.Fatalf("NoCensus: the report has a census %+v", without.Census)
	}
	got, err := CensusOfDir(context.Background(), vfs.Default, dir, o.Shards)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(with.Census) {
		t.Fatalf("census of the NoCensus directory %+v, reported with the census %+v", got, with.Census)
	}
}

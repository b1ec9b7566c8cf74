package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/check"
)

// genDumps pins the dumps of directories gen made before it built the
// shard stores from one working store at Close (session of 2026-12-05,
// main at ea0e8a8): the SHA-256 of `fusee dump` (physical: shard and
// run numbers, outbox sequence numbers, each shard's counters) and of
// `fusee dump --logical`. The stores' pebble files may differ from one
// build of gen to the next; their keys and values, and so these dumps,
// must not. The first three were taken with that build's binary (fusee
// gen <dir> -q <flags>; fusee dump [--logical] <dir> | sha256sum), the
// evicting ones by this test run on that commit.
var genDumps = []struct {
	name          string
	o             GenOptions
	phys, logical string
}{
	{"--shards 3 --runs 3000 --seed 5", GenOptions{Shards: 3, Runs: 3000, Seed: 5},
		"bb6c01fcef845f3c080713992fa296673f2d1d98e8eaaa6354cafda626bb9cc6", goldenLogical},
	{"--shards 1 --runs 2000 --seed 3 --finished-frac 0.9", GenOptions{Shards: 1, Runs: 2000, Seed: 3, FinishedFrac: 0.9},
		"3de127efe6cbad0063d3308e6ae66ba710d0626e5c39038b2a69b884de618e68", "45db1edef160012dbe9785331be079f4ef073af204f18a162a262786ecc70985"},
	{"--shards 8 --runs 20000 --seed 1", GenOptions{Shards: 8, Runs: 20000, Seed: 1},
		"104db7354b14f303d9e8ce03e28def76c4fa26be88bf459232e226f9373da65a", "d798a21ca0cea012a38c6b7e5c1e56493ee9e4d9ccbca886ea758fee8d950fba"},
	// Nearly every event reads its run back (a checkpoint every 40
	// resident runs, queues spilled past 60 events).
	{"evicting, 5 shards, 3000 runs, seed 5", GenOptions{Shards: 5, Runs: 3000, Seed: 5, Config: Config{MaxResident: 40}, spillAt: 60},
		"283574cceabf416619b23e52fd95fc2decf999c77ad264603835e44b0b140bef", goldenLogical},
	{"evicting, 7 shards, 6000 runs, seed 12", GenOptions{Shards: 7, Runs: 6000, Seed: 12, Config: Config{MaxResident: 100}, spillAt: 200},
		"c45cd9eeef19e17a3f7540f59db04c3e0c9a2bd645de03915e6142d207fc1118", "1e2660b38121c64731918c7a4de39f90c48b3e8df3fa0a919922f3c28b053e48"},
}

// TestGenSameDumps: gen makes directories whose physical and logical
// dumps are those gen made before (genDumps), and that verify clean.
func TestGenSameDumps(t *testing.T) {
	for _, c := range genDumps {
		t.Run(c.name, func(t *testing.T) {
			if (testing.Short() || testtier.Quick()) && c.o.Runs > 5000 {
				t.Skip("generates", c.o.Runs, "runs (the quick tier leaves it to FUSEE_RACE_FULL=1)")
			}
			dir, _ := genDir(t, c.o)
			phys, logical := dumpHash(t, dir, true), dumpHash(t, dir, false)
			t.Logf("phys %s logical %s", phys, logical)
			if phys != c.phys || logical != c.logical {
				t.Errorf("dump sha256 %s, --logical %s; want %s and %s", phys, logical, c.phys, c.logical)
			}
			verifyDirClean(t, dir)
		})
	}
}

// dumpHash is the SHA-256 of what `fusee dump` (physical) or `fusee dump
// --logical` prints for the closed directory dir.
func dumpHash(t testing.TB, dir string, physical bool) string {
	t.Helper()
	ctx := context.Background()
	d, err := check.OpenDir(ctx, vfs.Default, dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	h := sha256.New()
	err = d.WriteDump(ctx, h, check.DumpOptions{Physical: physical})
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("dump %s: %v", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// verifyDirClean fails the test if `fusee verify` would find a problem in
// the closed directory dir.
func verifyDirClean(t testing.TB, dir string) {
	t.Helper()
	ctx := context.Background()
	d, err := check.OpenDir(ctx, vfs.Default, dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer d.Close()
	if _, err := d.Verify(ctx, check.Options{}, func(f check.Finding) error {
		t.Errorf("verify %s: %v", dir, f)
		return nil
	}); err != nil {
		t.Fatalf("verify %s: %v", dir, err)
	}
}

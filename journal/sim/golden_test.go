package sim

import "testing"

// goldenLogical pins what `fusee dump --logical` prints for a directory
// that gen made from one seed: the SHA-256 of its output, taken with the
// build before gen's speed work of session 5 (fusee-main gen <dir>
// --shards 3 --runs 3000 --seed 5; fusee dump --logical <dir> | sha256sum,
// 25,931 lines). Work on gen's speed (batching, eviction, store tuning)
// must leave the logical content of every seed unchanged; a change to
// the workload itself (docs/simulator.md) changes this hash on purpose,
// and then the new value is taken the same way and the reason written
// here.
const goldenLogical = "18589fef54fefe436f316d7690afd816a44d851c18d2b0d94484d58ad2abde7e"

// TestGenGoldenLogical: gen of a fixed seed dumps to the pinned logical
// content, with the default engine settings and with an engine that
// evicts every few dozen resident runs and spills its queues early (so
// that nearly every event reads its run back from a store), at two shard
// counts.
func TestGenGoldenLogical(t *testing.T) {
	cases := []struct {
		name   string
		shards int
		cfg    Config
		spill  int
	}{
		{"default, 3 shards", 3, Config{}, 0},
		{"evicting, 5 shards", 5, Config{MaxResident: 40}, 60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := GenOptions{Shards: c.shards, Runs: 3000, Seed: 5, Config: c.cfg, spillAt: c.spill}
			dir, _ := genDir(t, o)
			if got := logicalDumpHash(t, dir); got != goldenLogical {
				t.Fatalf("dump --logical of gen --runs 3000 --seed 5 (%s): sha256 %s, want %s", c.name, got, goldenLogical)
			}
		})
	}
}

// logicalDumpHash is the SHA-256 of what `fusee dump --logical` prints
// for the closed directory dir.
func logicalDumpHash(t testing.TB, dir string) string { return dumpHash(t, dir, false) }

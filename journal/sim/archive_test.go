package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/store"
)

// TestArchiveAtCheckpoint: a run whose retention ends while it is evicted
// is archived by the checkpoint from the records its store holds
// (model.Changes.Stored), not read back and archived in memory. The same
// seed generated with eviction at every checkpoint (nearly every
// tombstone takes that path) and with no eviction at all (every tombstone
// archives a journal in memory) must give the same logical dump and the
// same archive, run and index keys, byte for byte, in every store.
func TestArchiveAtCheckpoint(t *testing.T) {
	for _, seed := range testtier.Subset(t, []uint64{3, 11}, 2) { // one a day in the quick tier
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			o := GenOptions{Shards: 3, Runs: 1500, Seed: seed}
			never := o
			never.noEvict = true
			never.Config.MaxResident = 1 << 30
			always := o
			always.Config.MaxResident = 2 // checkpoint and evict after every busy round
			dn, rn := genDir(t, never)
			da, ra := genDir(t, always)
			if rn.Census.States["tombstone"] == 0 || rn.Census.Archived == 0 {
				t.Fatalf("seed %d archived nothing (census %+v): the test proves nothing", seed, rn.Census)
			}
			if ra.Stats.Checkpoints < 10*rn.Stats.Checkpoints {
				t.Fatalf("evicting gen checkpointed %d times, the other %d: eviction was not forced", ra.Stats.Checkpoints, rn.Stats.Checkpoints)
			}
			if hn, ha := dumpHash(t, dn, false), dumpHash(t, da, false); hn != ha {
				t.Fatalf("dump --logical differs: never evicting %s, evicting at every checkpoint %s", hn, ha)
			}
			for i := range o.Shards {
				a := storeKeys(t, da, i)
				n := storeKeys(t, dn, i)
				if len(a) != len(n) {
					t.Fatalf("shard %d: %d archive/run/index keys evicting, %d not", i, len(a), len(n))
				}
				for j := range a {
					if !bytes.Equal(a[j][0], n[j][0]) || !bytes.Equal(a[j][1], n[j][1]) {
						t.Fatalf("shard %d: key %d: evicting %q = %x, not evicting %q = %x", i, j, a[j][0], a[j][1], n[j][0], n[j][1])
					}
				}
			}
		})
	}
}

// storeKeys lists the archive, index and run keys (with values) of shard
// i's store in dir: what archiving writes and deletes.
func storeKeys(t *testing.T, dir string, i int) [][2][]byte {
	t.Helper()
	path := store.StoreDir(vfs.Default, dir, i)
	db, err := store.OpenStore(vfs.Default, path, nil, true, false)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	var out [][2][]byte
	for _, kind := range []byte{store.KeyArchive, store.KeyIndex, store.KeyRun} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

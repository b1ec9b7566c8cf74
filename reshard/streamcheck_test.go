package reshard_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/reshard"
)

// TestStreamCheckEqualsReadBack: on random directories and counts
// (shrink, odd changes, grows to a multiple written directly, a budget
// so small that the maps and the sort spill), the new shards' digest
// computed as their stores are written equals the digest of the same
// stores read back whole the way the engine reads them (the reshard
// fails otherwise): the check of docs/reshard.md §6 sees what the
// read-back saw.
func TestStreamCheckEqualsReadBack(t *testing.T) {
	defer reshard.SetReadBackCheck(reshard.SetReadBackCheck(true))
	rng := rand.New(rand.NewPCG(41, 42))
	iters := 4
	if testtier.Long() {
		iters = 12
	}
	cases := [][2]int{{4, 3}, {3, 6}, {5, 7}, {1, 2}, {6, 1}}
	for it := range iters {
		c := cases[it%len(cases)]
		if it >= len(cases) {
			c = [2]int{1 + rng.IntN(6), 1 + rng.IntN(8)}
			if c[0] == c[1] {
				c[1]++
			}
		}
		opts := reshard.Options{}
		if it%2 == 1 {
			opts.Memory = 1 // everything spills
		}
		dir := genDir(t, c[0], scaled(300+rng.IntN(300)), rng.Uint64())
		before := logicalDump(t, dir)
		doReshard(t, dir, c[1], opts)
		sameDump(t, "after the reshard", before, logicalDump(t, dir))
	}
}

// TestCheckCatchesBadRewrite: a rewrite that hands a new store a wrong
// value (an index entry naming another run, a run entry of another
// generation, a journal record dropped, an archive moved to another run)
// stops the reshard before the switch: an error, the directory as it
// was, no reshard.new.
func TestCheckCatchesBadRewrite(t *testing.T) {
	defer reshard.SetCorruptWrite(nil)
	src := genDir(t, 4, scaled(400), 17)
	faults := map[string]func(shard int, key, value []byte) ([]byte, bool){
		"index names the next run": func(_ int, key, value []byte) ([]byte, bool) {
			if key[0] != store.KeyIndex || len(value) != 8 {
				return value, true
			}
			v := append([]byte(nil), value...)
			binary.BigEndian.PutUint64(v, binary.BigEndian.Uint64(v)+1)
			return v, true
		},
		"a journal record dropped": func(_ int, key, value []byte) ([]byte, bool) {
			k, err := store.ParseStoreKey(key)
			return value, err != nil || !k.IsRecord || k.Pos != 1
		},
		// A record copied as it was is only peeked at on the new side
		// (its kind, presence bits, position): its bytes must still count.
		"a copied record's last byte flipped": func(_ int, key, value []byte) ([]byte, bool) {
			return copiedRecord(key, value, func(v []byte) []byte { v[len(v)-1] ^= 0x40; return v })
		},
		"a copied record cut short": func(_ int, key, value []byte) ([]byte, bool) {
			return copiedRecord(key, value, func(v []byte) []byte { return v[:len(v)-1] })
		},
		"a value byte flipped": func(_ int, key, value []byte) ([]byte, bool) {
			k, err := store.ParseStoreKey(key)
			if err != nil || k.Kind != store.KeySeen || len(value) == 0 {
				return value, true
			}
			v := append([]byte(nil), value...)
			v[len(v)-1] ^= 1
			return v, true
		},
	}
	var checkErrs int
	for name, f := range faults {
		for _, n := range []int{3, 8} { // the sorted write and the direct one
			dir := filepath.Join(t.TempDir(), "d")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			before := physicalDump(t, dir)
			reshard.SetCorruptWrite(f)
			_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: n})
			reshard.SetCorruptWrite(nil)
			if err == nil {
				t.Errorf("%s, 4->%d: the reshard succeeded", name, n)
				continue
			}
			var ce *reshard.CheckError
			if errors.As(err, &ce) {
				checkErrs++
			}
			t.Logf("%s, 4->%d: %v", name, n, err)
			if _, serr := os.Stat(filepath.Join(dir, reshard.NewDirName)); serr == nil {
				t.Errorf("%s, 4->%d: reshard.new left behind", name, n)
			}
			sameDump(t, name, before, physicalDump(t, dir))
		}
	}
	if checkErrs == 0 {
		t.Errorf("no fault was caught by the digest comparison itself")
	}
}

// copiedRecord gives a journal record without a run reference (past its
// start record) to f, other values back as they are.
func copiedRecord(key, value []byte, f func([]byte) []byte) ([]byte, bool) {
	k, err := store.ParseStoreKey(key)
	if err != nil || !k.IsRecord || k.Pos == 0 || len(value) < 3 {
		return value, true
	}
	if h, err := model.PeekRecord(value); err != nil || h.HasRefs() {
		return value, true
	}
	return f(append([]byte(nil), value...)), true
}

package store

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"
)

// TestSpillMapMatchesMap drives a SpillMap with a tiny budget, sealing a
// run at almost every commit, against a Go map: Get and Each (under any
// prefix) must see the last value Put, whichever run holds it.
func TestSpillMapMatchesMap(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp(base, "spill")
		if err != nil {
			t.Fatal(err)
		}
		m := NewSpillMap(vfs.Default, filepath.Join(dir, "m"), rapid.Int64Range(1, 4<<10).Draw(t, "budget"))
		m.SealEvery(rapid.Int64Range(1, 64<<10).Draw(t, "sealAt"))
		defer m.Close()
		want := map[string][]byte{}
		key := rapid.StringMatching(`[abc]{0,4}`)
		for range rapid.IntRange(1, 120).Draw(t, "ops") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			default: // Put
				k := key.Draw(t, "k")
				v := bytes.Repeat([]byte{byte(len(want))}, rapid.IntRange(0, 3000).Draw(t, "vlen"))
				if err := m.Put([]byte(k), v); err != nil {
					t.Fatal(err)
				}
				want[k] = v
			case 7, 8: // Get
				k := key.Draw(t, "k")
				v, ok, err := m.Get([]byte(k))
				if err != nil {
					t.Fatal(err)
				}
				if w, wok := want[k]; ok != wok || !bytes.Equal(v, w) {
					t.Fatalf("Get(%q) = %d bytes, %v; want %d bytes, %v", k, len(v), ok, len(w), wok)
				}
			case 9: // Each under a prefix
				p := key.Draw(t, "prefix")
				var got []string
				err := m.Each([]byte(p), func(k, v []byte) error {
					if !bytes.Equal(v, want[string(k)]) {
						return fmt.Errorf("Each: %q has %d bytes, want %d", k, len(v), len(want[string(k)]))
					}
					got = append(got, string(k))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				var exp []string
				for _, k := range slices.Sorted(maps.Keys(want)) {
					if strings.HasPrefix(k, p) {
						exp = append(exp, k)
					}
				}
				if !slices.Equal(got, exp) {
					t.Fatalf("Each(%q) = %q, want %q", p, got, exp)
				}
			}
		}
	})
}

// TestSpillMapBoundsLevelZero writes many memtables' worth of keys in
// random order: level 0 of the scratch store must keep to the tables of
// the run being written and the one being sealed, not one per flush
// (reading merges every overlapping level-0 table at once).
func TestSpillMapBoundsLevelZero(t *testing.T) {
	m := NewSpillMap(vfs.Default, filepath.Join(t.TempDir(), "m"), 64<<10)
	defer m.Close()
	m.SealEvery(2 * int64(m.memtableBytes()))
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 24 << 10 // 24 MiB of 1 KiB values: 24 memtables
	v := make([]byte, 1<<10)
	maxL0 := 0
	for i := range n {
		k := fmt.Appendf(nil, "%016x", rng.Uint64())
		v[0] = byte(i)
		if err := m.Put(k, v); err != nil {
			t.Fatal(err)
		}
		if i%1024 == 0 && m.db != nil {
			maxL0 = max(maxL0, int(m.db.Metrics().Levels[0].TablesCount))
		}
	}
	if err := m.Settle(); err != nil {
		t.Fatal(err)
	}
	if m.run < 4 {
		t.Fatalf("%d runs sealed, want several", m.run)
	}
	// Two runs of two memtables each, and pebble's flush splits.
	t.Logf("%d runs, at most %d level-0 tables", m.run+1, maxL0)
	if maxL0 > 12 {
		t.Fatalf("level 0 reached %d tables: sealed runs are not compacted out of it", maxL0)
	}
	count := 0
	var prev []byte
	err := m.Each(nil, func(k, _ []byte) error {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("Each: %q after %q", k, prev)
		}
		prev = append(prev[:0], k...)
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("Each saw %d keys, want %d", count, n)
	}
}

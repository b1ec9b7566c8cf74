package extsort

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"pgregory.net/rapid"
)

// TestRunSorterMatchesSort: the run sorter gives every shard's keys in
// the order a plain sort gives them, with whole runs (an entry and its
// records) as items and single keys of every other kind, in memory and
// through chunks of every size down to one item, and whether one writer
// takes every key or several take them (runs spread over them at random);
// once every shard is merged, no scratch file is left.
func TestRunSorterMatchesSort(t *testing.T) {
	// On the real file system the merge cuts what it has read out of the
	// sections (punch.go): at every page here.
	defer func(step int64) { punchStep = step }(punchStep)
	punchStep = punchAlign
	tmp := t.TempDir()
	runs := 0
	cutsBefore := cuts.Load()
	defer func() {
		if canCut(t, tmp) && !t.Failed() && cuts.Load() == cutsBefore {
			t.Errorf("no section was cut as it was merged (%d merges on the real file system)", runs)
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		shards := rapid.IntRange(1, 4).Draw(t, "shards")
		budget := rapid.SampledFrom([]int64{0, 1 << 10, 1 << 16, 1 << 30}).Draw(t, "budget")
		fs, dir := vfs.FS(vfs.NewMem()), "/sort"
		if rapid.Bool().Draw(t, "real file system") {
			runs++
			fs, dir = vfs.Default, filepath.Join(tmp, strconv.Itoa(runs))
		}
		s := New(fs, dir, shards, budget, 2)
		writers := s.Writers(rapid.IntRange(1, 3).Draw(t, "writers"))
		if budget == 1<<10 {
			for _, w := range writers {
				w.budget = 1 // every item a chunk of its own
			}
		}
		type kv struct {
			shard int
			k, v  string
		}
		var want []kv
		var w *Writer
		put := func(j int, k, v []byte) {
			if err := w.Put(j, k, v); err != nil {
				t.Fatal(err)
			}
			want = append(want, kv{j, string(k), string(v)})
		}
		// Run numbers are distinct per shard; runs come in any order.
		nos := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 1<<40), 0, 40, rapid.ID[uint64]).Draw(t, "runs")
		// Large values make sections of many pages (cut as they are read).
		scale := rapid.SampledFrom([]int{150, 1500}).Draw(t, "value scale")
		items := map[*Writer]int{} // items each writer was given
		for _, no := range nos {
			w = writers[rapid.IntRange(0, len(writers)-1).Draw(t, "writer")]
			items[w]++
			j := rapid.IntRange(0, shards-1).Draw(t, "j")
			put(j, store.AppendRunKey(nil, model.RunNo(no)), []byte(fmt.Sprint("entry", no)))
			for pos := range rapid.IntRange(0, 5).Draw(t, "records") {
				put(j, store.AppendRecordKey(nil, model.RunNo(no), uint32(pos)), bytes.Repeat([]byte{byte(pos), byte(no)}, pos*scale))
			}
			if rapid.Bool().Draw(t, "other") {
				put(rapid.IntRange(0, shards-1).Draw(t, "oj"), store.IndexKey(fmt.Sprint("wf", no)), []byte{1})
				items[w]++
			}
		}
		if err := s.Settle(); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(want, func(a, b kv) int {
			if a.shard != b.shard {
				return a.shard - b.shard
			}
			return bytes.Compare([]byte(a.k), []byte(b.k))
		})
		var got []kv
		for j := range shards {
			err := s.Each(j, func(k, v []byte) error {
				got = append(got, kv{j, string(k), string(v)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("spilled %v: got %d keys, want %d (or they differ)", s.Spilled(), len(got), len(want))
		}
		// Every chunk's sections are removed once merged.
		if left, err := s.fs.List(s.dir); err == nil && len(left) > 0 {
			t.Fatalf("%d scratch files are left after every shard was merged: %v", len(left), left)
		}
		most := 0
		for _, n := range items {
			most = max(most, n)
		}
		if budget == 1<<10 && most > 1 && !s.Spilled() {
			t.Fatalf("a budget of one byte did not spill though a writer was given %d items", most)
		}
	})
}

// TestSortArenaMatchesSort: an arena's items are sorted by (shard, key)
// as a comparison sort orders them, with enough items for the radix
// sort's buckets and keys drawn from a few bytes, so that many share
// their first 16 bytes (and differ after them, or are a prefix of
// another) or share every byte the radix sort looks at but one.
func TestSortArenaMatchesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards := rapid.SampledFrom([]int{1, 2, 300}).Draw(t, "shards")
		w := New(vfs.NewMem(), "/sort", shards, 1<<30, 1).Writers(1)[0]
		type kv struct {
			shard int
			k     string
		}
		bytesOf := func(most int) *rapid.Generator[[]byte] {
			return rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 'Q', 0xff}), 0, most)
		}
		prefixes := rapid.SliceOfN(bytesOf(20), 1, 4).Draw(t, "prefixes")
		seen := map[kv]bool{}
		var want []kv
		for range rapid.IntRange(0, 3000).Draw(t, "items") {
			k := slices.Concat(rapid.SampledFrom(prefixes).Draw(t, "prefix"), bytesOf(6).Draw(t, "tail"))
			e := kv{rapid.IntRange(0, shards-1).Draw(t, "j"), string(k)}
			if seen[e] {
				continue // a shard's keys are distinct
			}
			seen[e] = true
			want = append(want, e)
			if err := w.Put(e.shard, k, nil); err != nil {
				t.Fatal(err)
			}
		}
		w.sortArena()
		slices.SortFunc(want, func(a, b kv) int {
			if a.shard != b.shard {
				return a.shard - b.shard
			}
			return bytes.Compare([]byte(a.k), []byte(b.k))
		})
		got := make([]kv, len(w.items))
		for i := range w.items {
			got[i] = kv{int(w.items[i].shard), string(w.key(&w.items[i]))}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d items out of order", len(got))
		}
	})
}

// TestChunkItemsLargerThanTheReadBuffer: a chunk's items are read in
// place when they fit the merge's read buffer and copied when they do
// not (4 KiB at the least budget); mixed, in every order, the merge gives
// every shard's keys as a plain sort does.
func TestChunkItemsLargerThanTheReadBuffer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		s := New(vfs.NewMem(), "/sort", shards, 0, 2)
		w := s.Writers(1)[0]
		w.budget = 1                // every item a chunk of its own
		left := map[string]string{} // the pairs put, by shard and key, until the merge gives them
		nos := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 1<<40), 1, 20, rapid.ID[uint64]).Draw(t, "runs")
		for _, no := range nos {
			j := rapid.IntRange(0, shards-1).Draw(t, "j")
			for pos := range rapid.IntRange(0, 3).Draw(t, "records") + 1 {
				k := store.AppendRunKey(nil, model.RunNo(no))
				if pos > 0 {
					k = store.AppendRecordKey(nil, model.RunNo(no), uint32(pos-1))
				}
				v := bytes.Repeat([]byte{byte(no), byte(pos)}, rapid.IntRange(0, 5000).Draw(t, "half"))
				if err := w.Put(j, k, v); err != nil {
					t.Fatal(err)
				}
				left[fmt.Sprintf("%d/%x", j, k)] = string(v)
			}
		}
		if err := s.Settle(); err != nil {
			t.Fatal(err)
		}
		for j := range shards {
			var last []byte
			err := s.Each(j, func(k, v []byte) error {
				id := fmt.Sprintf("%d/%x", j, k)
				if want, ok := left[id]; !ok || want != string(v) || (last != nil && bytes.Compare(last, k) >= 0) {
					return fmt.Errorf("shard %d: key %x (after %x) with %d bytes: not a pair put, or out of order", j, k, last, len(v))
				}
				delete(left, id)
				last = append(last[:0], k...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(left) > 0 {
			t.Fatalf("%d pairs put were not given by the merge", len(left))
		}
	})
}

// canCut says whether files in dir can have holes punched (Linux, and a
// file system that takes them): where they cannot, the merge cuts
// nothing, rightly.
func canCut(t *testing.T, dir string) bool {
	path := filepath.Join(dir, "probe")
	if err := os.WriteFile(path, make([]byte, 2*punchAlign), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	h := openPuncher(path)
	if h == nil {
		return false
	}
	defer h.close()
	return h.punch(0, punchAlign)
}

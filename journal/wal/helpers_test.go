package wal

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// batchCopy is a Batch copied out of Read's reused memory, with entries as
// strings so that batches compare with ==-based helpers and print readably.
type batchCopy struct {
	Number   uint64
	Pos      Position
	Sections []sectionCopy
}

type sectionCopy struct {
	Shard    int
	FirstLSN uint64
	Entries  []string
}

func copyBatch(b Batch) batchCopy {
	c := batchCopy{Number: b.Number, Pos: b.Pos}
	for _, s := range b.Sections {
		sc := sectionCopy{Shard: s.Shard, FirstLSN: s.FirstLSN}
		for _, e := range s.Entries {
			sc.Entries = append(sc.Entries, string(e))
		}
		c.Sections = append(c.Sections, sc)
	}
	return c
}

// expected is the batch Append should have written for entries (whose LSNs
// Append has set).
func expected(number uint64, pos Position, entries []Entry) batchCopy {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b Entry) int { return cmp.Compare(a.Shard, b.Shard) })
	b := batchCopy{Number: number, Pos: pos}
	for _, e := range sorted {
		if n := len(b.Sections); n == 0 || b.Sections[n-1].Shard != e.Shard {
			b.Sections = append(b.Sections, sectionCopy{Shard: e.Shard, FirstLSN: e.LSN})
		}
		b.Sections[len(b.Sections)-1].Entries = append(b.Sections[len(b.Sections)-1].Entries, string(e.Data))
	}
	return b
}

func collect(fs vfs.FS, dir string, from Position) ([]batchCopy, Tail, error) {
	var got []batchCopy
	tail, err := Read(fs, dir, from, func(b Batch) error {
		got = append(got, copyBatch(b))
		return nil
	})
	return got, tail, err
}

func collectV2(fs vfs.FS, dir string, shard int) ([]batchCopy, Tail, error) {
	var got []batchCopy
	tail, err := ReadV2(fs, dir, shard, func(b Batch) error {
		got = append(got, copyBatch(b))
		return nil
	})
	return got, tail, err
}

// diffBatches describes the first difference between two batch lists.
func diffBatches(got, want []batchCopy) string {
	for i := range min(len(got), len(want)) {
		if reflect.DeepEqual(got[i], want[i]) {
			continue
		}
		if g, w := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]); g != w {
			return fmt.Sprintf("batch %d:\n got %.300s\nwant %.300s", i, g, w)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("got %d batches, want %d", len(got), len(want))
	}
	return ""
}

func fileBytes(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func putFile(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	// Under -race pebble's MemFS scrambles what it was given to write.
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFS copies dir of src into a new in-memory filesystem.
func copyFS(t testing.TB, src vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	dst := vfs.NewMem()
	if _, err := vfs.Clone(src, dst, dir, dir); err != nil {
		t.Fatal(err)
	}
	return dst
}

// payload makes n deterministic bytes that differ with seed.
func payload(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func segPath(fs vfs.FS, dir string, seg uint64) string {
	return fs.PathJoin(dir, segmentName(seg))
}

// testLog is a log written by a test: the batches as appended, and the
// position each one got.
type testLog struct {
	fs      vfs.FS
	dir     string
	w       *Writer
	batches []batchCopy
}

func newTestLog(t testing.TB, fs vfs.FS, opts Options) *testLog {
	t.Helper()
	if opts.LogID == 0 {
		opts.LogID = 0x1111
	}
	w, err := Create(fs, "wal", opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{fs: fs, dir: "wal", w: w}
}

// append appends one batch with the given entry sizes over shards, the
// content determined by seed.
func (l *testLog) append(t testing.TB, seed uint64, shards []int, sizes []int) {
	t.Helper()
	entries := make([]Entry, len(sizes))
	for i, n := range sizes {
		entries[i] = Entry{Shard: shards[i%len(shards)], Data: payload(seed*1000+uint64(i), n)}
	}
	pos, err := l.w.Append(entries)
	if err != nil {
		t.Fatal(err)
	}
	l.batches = append(l.batches, expected(l.w.LastBatch(), pos, entries))
}

func (l *testLog) close(t testing.TB) {
	t.Helper()
	if err := l.w.Close(); err != nil {
		t.Fatal(err)
	}
}

// tailString prints a Tail with only the shards whose next LSN is not 1.
func tailString(t Tail) string {
	var next []string
	for shard, n := range t.NextLSN {
		if n != 1 {
			next = append(next, fmt.Sprintf("%d:%d", shard, n))
		}
	}
	return fmt.Sprintf("{log %x, last batch %d (%08x), next LSNs %v, end %v, torn %v}",
		t.LogID, t.LastBatch, t.LastSum, next, t.End, t.Torn)
}

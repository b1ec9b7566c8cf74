package wal

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// v2Log writes a format 2 log for shard and returns the batches as
// appended.
func v2Log(t *testing.T, fs vfs.FS, dir string, shard int, opts Options, sizes [][]int, rotateAt int) []batchCopy {
	t.Helper()
	w, err := CreateV2(fs, dir, shard, opts)
	if err != nil {
		t.Fatal(err)
	}
	var batches []batchCopy
	for i, sz := range sizes {
		if i == rotateAt {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		var entries [][]byte
		b := batchCopy{Sections: []sectionCopy{{Shard: shard}}}
		for j, n := range sz {
			e := payload(uint64(shard*100000+i*100+j), n)
			entries = append(entries, e)
			b.Sections[0].Entries = append(b.Sections[0].Entries, string(e))
		}
		first, pos, err := w.Append(entries)
		if err != nil {
			t.Fatal(err)
		}
		b.Pos, b.Sections[0].FirstLSN = pos, first
		batches = append(batches, b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return batches
}

var v2Sizes = [][]int{{10}, {200, 3}, {40 << 10}, {1, 2, 3}, {500}, {70 << 10, 9}, {33}}

func TestV2RoundTrip(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		fs := vfs.NewMem()
		dir := ShardLogDir(fs, "data", 12)
		if dir != "data/shards/0012/log" {
			t.Fatalf("shard log dir %q", dir)
		}
		want := v2Log(t, fs, dir, 12, Options{NoSync: noSync, SegmentSize: 50 << 10}, v2Sizes, 4)
		if want[len(want)-1].Pos.Segment < 3 {
			t.Fatalf("the log did not rotate by size: %v", want[len(want)-1].Pos)
		}
		got, tail, err := collectV2(fs, dir, 12)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffBatches(got, want); d != "" {
			t.Fatal(d)
		}
		if tail.NextLSN[12] != 12 || tail.NextLSN[11] != 1 || tail.Torn != nil || tail.LastBatch != 0 {
			t.Fatalf("tail %s", tailString(tail))
		}
		if _, err := ReadV2(fs, dir, 13, nil); err == nil || !strings.Contains(err.Error(), "shard 12's log, not shard 13's") {
			t.Fatalf("reading shard 12's log as shard 13's: %v", err)
		}
		var ce *CorruptError
		if _, err := Read(fs, dir, Position{}, nil); !errors.As(err, &ce) || !strings.Contains(ce.Reason, "log format 2") {
			t.Fatalf("reading a format 2 log as format 3: %v", err)
		}
	}
}

func TestV2TornAndCorrupt(t *testing.T) {
	fs := vfs.NewCrashableMem()
	dir := ShardLogDir(fs, "data", 3)
	want := v2Log(t, fs, dir, 3, Options{}, [][]int{{10}, {200, 3}, {1, 2, 3}, {500}}, -1)
	path := segPath(fs, dir, 1)
	data := fileBytes(t, fs, path)
	last := want[3].Pos.Offset

	t.Run("torn", func(t *testing.T) {
		fs := copyFS(t, fs, "data")
		putFile(t, fs, path, data[:last+100])
		got, tail, err := collectV2(fs, dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffBatches(got, want[:3]); d != "" {
			t.Fatal(d)
		}
		if tail.Torn == nil || tail.Torn.Offset != last || tail.Torn.Bytes != 100 || tail.NextLSN[3] != 7 {
			t.Fatalf("tail %s", tailString(tail))
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		fs := copyFS(t, fs, "data")
		bad := append([]byte(nil), data...)
		bad[want[1].Pos.Offset+15] ^= 0x10
		putFile(t, fs, path, bad)
		_, _, err := collectV2(fs, dir, 3)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != want[1].Pos.Offset || ce.File != path {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("stale record of another shard", func(t *testing.T) {
		fs := copyFS(t, fs, "data")
		other := vfs.NewMem()
		odir := ShardLogDir(other, "data", 4)
		ob := v2Log(t, other, odir, 4, Options{}, [][]int{{10}, {200, 3}, {1, 2, 3}, {500}, {7}}, -1)
		odata := fileBytes(t, other, segPath(other, odir, 1))
		stale := odata[ob[4].Pos.Offset:]
		end, err := ReadV2(fs, dir, 3, nil) // where the trailer of the closed log starts
		if err != nil {
			t.Fatal(err)
		}
		putFile(t, fs, path, append(data[:end.End.Offset:end.End.Offset], stale...))
		got, tail, err := collectV2(fs, dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffBatches(got, want); d != "" {
			t.Fatal(d)
		}
		if tail.Torn == nil || !strings.Contains(tail.Torn.Reason, "a batch of shard 4 in shard 3's log") {
			t.Fatalf("torn %v", tail.Torn)
		}
	})
}

package wal

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s changed (run go test -update if that is intended):\n%s", path, firstLineDiff(got, string(want)))
	}
}

func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, gl, wl)
		}
	}
	return ""
}

// hexDump prints a file 16 bytes a line, offsets in decimal.
func hexDump(name string, data []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, %d bytes\n", name, len(data))
	for off := 0; off < len(data); off += 16 {
		fmt.Fprintf(&b, "%6d  % x\n", off, data[off:min(off+16, len(data))])
	}
	return b.String()
}

// TestFormatGolden pins the bytes of small logs of both formats, so that a
// change to the format (or to pebble's framing) cannot go unnoticed.
func TestFormatGolden(t *testing.T) {
	fs := vfs.NewMem()
	w, err := Create(fs, "wal", Options{LogID: 0x0123456789abcdef})
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]Entry{
		{{Shard: 5, Data: []byte("bb")}, {Shard: 0, Data: []byte("a")}},
		{{Shard: 5, Data: []byte("c")}},
		{{Shard: 1023, Data: []byte("")}},
	} {
		if _, err := w.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append([]Entry{{Shard: 0, Data: []byte("after rotation")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	// Segment 3 is the close segment Close created.
	for seg := uint64(1); seg <= 3; seg++ {
		dump.WriteString(hexDump(segmentName(seg), fileBytes(t, fs, segPath(fs, "wal", seg))))
	}
	golden(t, "format-v3.golden", dump.String())

	dir := ShardLogDir(fs, "data", 7)
	w2, err := CreateV2(fs, dir, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][][]byte{{[]byte("x"), []byte("yy")}, {[]byte("z")}} {
		if _, _, err := w2.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	golden(t, "format-v2.golden", hexDump(dir+"/"+segmentName(1), fileBytes(t, fs, segPath(fs, dir, 1))))
}

// TestMessagesGolden pins what the package says about damage, as the
// command layer will print it.
func TestMessagesGolden(t *testing.T) {
	fs, l := crashedLog(t, Options{}, func(l *testLog) {
		for i := range 6 {
			if i == 4 {
				if err := l.w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			l.append(t, uint64(i), []int{1, 2}, []int{60, 6})
		}
	})
	seg1, seg2 := segPath(fs, l.dir, 1), segPath(fs, l.dir, 2)
	outcome := func(fs vfs.FS, from Position) string {
		tail, err := Read(fs, l.dir, from, nil)
		switch {
		case err != nil:
			return "error: " + err.Error()
		case tail.Torn != nil:
			return "torn: " + tail.Torn.String()
		}
		return fmt.Sprintf("clean, %d batches", tail.LastBatch)
	}
	edit := func(path string, f func([]byte) []byte) vfs.FS {
		c := copyFS(t, fs, l.dir)
		putFile(t, c, path, f(fileBytes(t, c, path)))
		return c
	}
	var out strings.Builder
	for _, sc := range []struct {
		name string
		fs   vfs.FS
		from Position
	}{
		{"intact", fs, Position{}},
		{"last batch cut short", edit(seg2, func(b []byte) []byte { return b[:len(b)-5] }), Position{}},
		{"byte flipped in batch 2", edit(seg1, func(b []byte) []byte { b[l.batches[1].Pos.Offset+30] ^= 4; return b }), Position{}},
		{"segment 1 cut short", edit(seg1, func(b []byte) []byte { return b[:l.batches[3].Pos.Offset] }), Position{}},
		{"garbage after the last batch", edit(seg2, func(b []byte) []byte { return append(b, "garbage that is no record"...) }), Position{}},
		{"not a batch start", fs, Position{1, l.batches[1].Pos.Offset + 1}},
		{"removed segment", func() vfs.FS {
			c := copyFS(t, fs, l.dir)
			if err := RemoveBefore(c, l.dir, l.batches[4].Pos); err != nil {
				t.Fatal(err)
			}
			return c
		}(), l.batches[0].Pos},
	} {
		fmt.Fprintf(&out, "%s\n\t%s\n", sc.name, outcome(sc.fs, sc.from))
	}
	golden(t, "messages.golden", out.String())
}

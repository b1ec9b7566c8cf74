package store

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"pgregory.net/rapid"
)

// flipFS flips one bit at byte flipAt of every .sst file: a table that
// reaches the filesystem different from what its writer gave, in a data
// block in its middle (pebble's ingest reads a table's first and last
// blocks itself, so damage there would be found without our check).
type flipFS struct{ vfs.FS }

const flipAt = 100 << 10

func (fs flipFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &flipFile{File: f}, nil
}

type flipFile struct {
	vfs.File
	off int
}

func (f *flipFile) Write(p []byte) (int, error) {
	start := f.off
	f.off += len(p)
	if start <= flipAt && flipAt < f.off {
		q := append([]byte(nil), p...)
		q[flipAt-start] ^= 0x04
		return f.File.Write(q)
	}
	return f.File.Write(p)
}

func writeTestStore(t *testing.T, fs vfs.FS, dir string, noReadBack bool) error {
	t.Helper()
	sw, err := NewStoreWriter(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	sw.NoReadBack = noReadBack
	for i := range 5000 {
		if err := sw.Add(fmt.Appendf(nil, "r%06d", i), fmt.Appendf(nil, "value of run %d %0100d", i, i*7919)); err != nil {
			sw.Abort()
			t.Fatal(err)
		}
	}
	return sw.Finish()
}

// TestStoreWriterReadsTablesBack: a table whose bytes on the filesystem
// differ from what was written is refused before it is ingested. Without
// the read-back (NoReadBack) the same damaged table is ingested without
// complaint, so the check is what finds it.
func TestStoreWriterReadsTablesBack(t *testing.T) {
	fs := flipFS{vfs.NewMem()}
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeTestStore(t, fs, "/d/checked", false)
	if err == nil || !strings.Contains(err.Error(), "reading back") || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a damaged table was not refused: %v", err)
	}
	if err := writeTestStore(t, fs, "/d/unchecked", true); err != nil {
		t.Fatalf("without the read-back the damaged table should have gone in unnoticed (else this test proves nothing): %v", err)
	}
	if err := writeTestStore(t, vfs.NewMem(), "/clean", false); err != nil {
		t.Fatalf("an undamaged store: %v", err)
	}
}

// TestSequentialReadableReadsTheFile: checkTable's buffered readable gives
// the file's bytes for any read, in file order or not, within its buffer
// or larger, and refuses a read past the end as the file does.
func TestSequentialReadableReadsTheFile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		content := rapid.SliceOfN(rapid.Byte(), 0, 5000).Draw(t, "content")
		writeMemFile(t, fs, "f", content)
		open := func() objstorage.Readable {
			f, err := fs.Open("f")
			if err != nil {
				t.Fatal(err)
			}
			r, err := objstorageprovider.NewFileReadable(f, fs, objstorageprovider.NewReadaheadConfig(), "f")
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		plain := open()
		defer plain.Close()
		r := &sequentialReadable{Readable: open(), win: fileWindow{buf: make([]byte, 0, rapid.IntRange(1, 700).Draw(t, "buffer"))}}
		defer r.Close()
		off := int64(0)
		for range rapid.IntRange(1, 40).Draw(t, "reads") {
			if rapid.Bool().Draw(t, "jump") {
				off = rapid.Int64Range(0, int64(len(content))+10).Draw(t, "off")
			}
			n := rapid.IntRange(1, 900).Draw(t, "len") // pebble reads no empty blocks
			want, got := make([]byte, n), make([]byte, n)
			werr := plain.ReadAt(context.Background(), want, off)
			gerr := r.ReadAt(context.Background(), got, off)
			if (werr == nil) != (gerr == nil) || (werr == nil && !bytes.Equal(got, want)) {
				t.Fatalf("read of %d at %d of %d bytes: got %v (%x), the file gives %v (%x)", n, off, len(content), gerr, got, werr, want)
			}
			off += int64(n)
		}
	})
}

// TestTableFileWritesItsBytes: a new table's file holds exactly the
// bytes written to it, in order, once finished, whatever their sizes
// against its buffer.
func TestTableFileWritesItsBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		f, err := fs.Create("t", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		w := newTableFile(f)
		var want []byte
		for range rapid.IntRange(0, 30).Draw(t, "writes") {
			p := bytes.Repeat([]byte{byte(len(want))}, rapid.IntRange(0, 3*tableWriteBytes/2).Draw(t, "len"))
			want = append(want, p...)
			if err := w.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		r, err := fs.Open("t")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		st, err := r.Stat()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, st.Size())
		if _, err := r.ReadAt(got, 0); err != nil && len(got) > 0 {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the file holds %d bytes, %d were written (or they differ)", len(got), len(want))
		}
	})
}

// TestStoreWritersShareBuffers: stores written one after another share
// their tables' write buffers (tableBufs) and their read-back buffers
// (checkBufs) instead of each making its own: ten stores of three tables
// (written at once: three table buffers in use) make at most a few of
// either, not thirty and ten. (The garbage collector may empty a pool
// now and then, so a few, not three and one.)
func TestStoreWritersShareBuffers(t *testing.T) {
	var made [2]int
	for i, p := range []*sync.Pool{&tableBufs, &checkBufs} {
		newFn := p.New
		p.New = func() any { made[i]++; return newFn() }
		defer func() { p.New = newFn }()
	}
	const stores = 10
	fs := vfs.NewMem()
	for s := range stores {
		sw, err := NewStoreWriter(fs, fmt.Sprintf("/s%d", s))
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range "ART" { // three kinds of key: three tables
			for i := range 200 {
				if err := sw.Add(fmt.Appendf(nil, "%c%06d", kind, i), fmt.Appendf(nil, "value %d", i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := sw.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d stores: %d table buffers, %d read-back buffers made", stores, made[0], made[1])
	if testtier.Race {
		return // under the race detector sync.Pool drops a quarter of what it is given, on purpose
	}
	if made[0] > 3*3 || made[1] > 4 {
		t.Errorf("%d stores of 3 tables made %d table buffers and %d read-back buffers: they are not shared", stores, made[0], made[1])
	}
}

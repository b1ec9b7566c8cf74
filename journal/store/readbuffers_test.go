package store

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"
)

// TestReadBuffersReadTheFiles: tables read through shared read buffers
// give the files' bytes for any read, by several streams of several files
// at once, in file order or jumping, within a buffer or larger, past the
// end as the file answers (short, with its error), with fewer buffers
// than streams and files closed and opened again between reads.
// writeMemFile writes a file of content in a test's memory filesystem,
// from a copy: vfs.MemFS's Write may change what it is given (under the
// invariants build tag, which -race turns on).
func writeMemFile(t interface {
	Helper()
	Fatal(...any)
}, fs vfs.FS, name string, content []byte) {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(slices.Clone(content)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadBuffersReadTheFiles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		names := []string{"a.sst", "b.sst", "c.sst"}
		contents := map[string][]byte{}
		for _, name := range names {
			content := rapid.SliceOfN(rapid.Byte(), 0, 5000).Draw(t, "content")
			writeMemFile(t, fs, name, content)
			contents[name] = content
		}
		size := rapid.IntRange(1, 700).Draw(t, "size")
		bufs := NewReadBuffers(rapid.IntRange(1, 4).Draw(t, "buffers"), size)
		bfs := bufs.wrap(fs)
		open := func(fs vfs.FS, name string) vfs.File {
			f, err := fs.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		type stream struct {
			name string
			f    vfs.File
			off  int64
		}
		var streams []*stream
		for range rapid.IntRange(1, 5).Draw(t, "streams") {
			name := rapid.SampledFrom(names).Draw(t, "file")
			streams = append(streams, &stream{name: name, f: open(bfs, name)})
		}
		defer func() {
			for _, s := range streams {
				s.f.Close()
			}
		}()
		for range rapid.IntRange(1, 60).Draw(t, "reads") {
			s := rapid.SampledFrom(streams).Draw(t, "stream")
			content := contents[s.name]
			// Mostly blocks a few to a buffer; pebble reads no empty ones.
			n := rapid.IntRange(1, max(1, size/3)).Draw(t, "len")
			switch rapid.IntRange(0, 9).Draw(t, "what") {
			case 0:
				s.off = rapid.Int64Range(0, int64(len(content))+10).Draw(t, "off")
			case 1:
				s.f.Close()
				s.f = open(bfs, s.name)
			case 2:
				n = rapid.IntRange(1, 900).Draw(t, "large")
			}
			want, got := make([]byte, n), make([]byte, n)
			plain := open(fs, s.name)
			wn, werr := plain.ReadAt(want, s.off)
			plain.Close()
			gn, gerr := s.f.ReadAt(got, s.off)
			if gn != wn || fmt.Sprint(gerr) != fmt.Sprint(werr) || !bytes.Equal(got[:gn], want[:wn]) {
				t.Fatalf("read of %d at %d of %s (%d bytes): got %d, %v (%x), the file gives %d, %v (%x)",
					n, s.off, s.name, len(content), gn, gerr, got[:gn], wn, werr, want[:wn])
			}
			s.off += int64(n)
		}
	})
}

// countingFS counts the reads of its files.
type countingFS struct {
	vfs.FS
	reads *atomic.Int64
}

func (fs countingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return f, err
	}
	return countingFile{File: f, reads: fs.reads}, nil
}

type countingFile struct {
	vfs.File
	reads *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(p, off)
}

// TestReadBuffersReadAheadOfStreams: two streams of blocks, each in file
// order through the same buffers, are read from the files a buffer at a
// time (after the first block of each, which says nothing yet about the
// next); a file that is not a table, and a read of a table larger than
// half a buffer, go to the file as they come.
func TestReadBuffersReadAheadOfStreams(t *testing.T) {
	const block, size, blocks = 100, 1000, 50
	mem := vfs.NewMem()
	content := bytes.Repeat([]byte("0123456789"), block*blocks/10)
	for _, name := range []string{"a.sst", "b.sst", "OPTIONS"} {
		writeMemFile(t, mem, name, content)
	}
	var reads atomic.Int64
	fs := NewReadBuffers(2, size).wrap(countingFS{FS: mem, reads: &reads})
	a, _ := fs.Open("a.sst")
	b, _ := fs.Open("b.sst")
	defer a.Close()
	defer b.Close()
	p := make([]byte, block)
	for i := range blocks {
		for _, f := range []vfs.File{a, b} {
			if _, err := f.ReadAt(p, int64(i*block)); err != nil || !bytes.Equal(p, content[i*block:(i+1)*block]) {
				t.Fatalf("block %d: %v, %q, want %q", i, err, p, content[i*block:(i+1)*block])
			}
		}
	}
	// Per stream: the first block, then a buffer of size bytes from the
	// second block on.
	if got, want := reads.Load(), int64(2*(1+((blocks-1)*block+size-1)/size)); got != want {
		t.Errorf("%d reads of the files for two streams of %d blocks of %d bytes through buffers of %d bytes; want %d", got, blocks, block, size, want)
	}
	other, _ := fs.Open("OPTIONS")
	defer other.Close()
	reads.Store(0)
	for i := range blocks {
		other.ReadAt(p, int64(i*block))
		a.ReadAt(make([]byte, size/2+1), int64(i*block))
	}
	if got := reads.Load(); got != 2*blocks {
		t.Errorf("%d reads of the files for %d reads of a file that is not a table and %d larger than half a buffer; want each to go to its file", got, blocks, blocks)
	}
}

// TestReadBuffersConcurrentStreams: streams read at once on several
// goroutines, some of the same file, through fewer buffers than there are
// streams, each get their file's bytes (run with -race: the buffers are
// shared).
func TestReadBuffersConcurrentStreams(t *testing.T) {
	mem := vfs.NewMem()
	contents := map[string][]byte{}
	for i, name := range []string{"a.sst", "b.sst"} {
		content := make([]byte, 200<<10)
		for k := range content {
			content[k] = byte(k*7 + i + k>>8)
		}
		writeMemFile(t, mem, name, content)
		contents[name] = content
	}
	const streams = 12
	fs := NewReadBuffers(2, 4<<10).wrap(mem)
	errs := make(chan error, streams)
	for g := range streams {
		name := []string{"a.sst", "b.sst"}[g%2]
		go func() {
			f, err := fs.Open(name)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			content := contents[name]
			for off := 0; off < len(content); {
				n := min(100+(off/100+g*13)%1900, len(content)-off)
				p := make([]byte, n)
				if _, err := f.ReadAt(p, int64(off)); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(p, content[off:off+n]) {
					errs <- fmt.Errorf("stream %d: the %d bytes at %d of %s differ from the file's", g, n, off, name)
					return
				}
				off += n
			}
			errs <- nil
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

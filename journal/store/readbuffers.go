package store

import (
	"io"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ReadBuffers serve the reads of old stores' tables that follow each
// other in a file from buffers of a few blocks each: pebble reads a
// table's data blocks one system call per block (about 4 KiB), and a
// reshard reads every block of every old store twice, in file order (the
// plan pass, then the rewrite). A read that continues one before it in
// the same file (a stream: one iterator's level) fills a buffer from
// there with a single read, and the blocks that follow are copied from
// it; any other read (an index block, a point lookup) goes to the file as
// before. The bytes are the file's either way, and pebble checks each
// block's checksum on what it is given.
//
// The buffers are shared by every store opened through them, at most
// count of size bytes, the least recently used taken over when a new
// stream starts, so their memory does not grow with the stores or their
// tables. Only files that nothing writes while they are open may be read
// through them (a closed directory's stores, opened read-only): a buffer
// is never checked against the file again.
type ReadBuffers struct {
	size int
	mu   sync.Mutex
	tick uint64
	bufs []readBuffer
	// ends are where recent reads without a buffer ended, so that the
	// read after one is known to continue it.
	ends    [readEnds]readEnd
	nextEnd int
}

// readEnds is how many reads without a buffer ReadBuffers remember: more
// than the streams that run at once (each worker's iterators, a few
// levels each).
const readEnds = 64

type readEnd struct {
	f   *bufferedFile
	end int64
}

type readBuffer struct {
	f    *bufferedFile
	win  fileWindow
	next int64  // where the last read served from it ended
	used uint64 // tick of its last use
	busy bool   // being filled, outside the lock
}

// NewReadBuffers returns count buffers of size bytes (allocated when
// first filled) for OpenShardReaderWith.
func NewReadBuffers(count, size int) *ReadBuffers {
	return &ReadBuffers{size: size, bufs: make([]readBuffer, count)}
}

// wrap is fs with its tables (".sst" files) read through b.
func (b *ReadBuffers) wrap(fs vfs.FS) vfs.FS {
	if b == nil {
		return fs
	}
	return &bufferedFS{FS: fs, b: b}
}

type bufferedFS struct {
	vfs.FS
	b *ReadBuffers
}

func (fs *bufferedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &bufferedFile{File: f, b: fs.b}, nil
}

func (fs *bufferedFS) Unwrap() vfs.FS { return fs.FS }

type bufferedFile struct {
	vfs.File
	b *ReadBuffers
}

func (f *bufferedFile) ReadAt(p []byte, off int64) (int, error) {
	b := f.b
	if len(p) > b.size/2 {
		return f.File.ReadAt(p, off)
	}
	b.mu.Lock()
	b.tick++
	var cont *readBuffer // a buffer of f whose last read ends at off
	for i := range b.bufs {
		rb := &b.bufs[i]
		if rb.f != f || rb.busy {
			continue
		}
		if rb.win.copyOut(p, off) {
			rb.next, rb.used = off+int64(len(p)), b.tick
			b.mu.Unlock()
			return len(p), nil
		}
		if rb.next == off {
			cont = rb
		}
	}
	if cont == nil && b.continues(f, off) {
		cont = b.leastUsed()
	}
	if cont == nil {
		b.remember(f, off+int64(len(p)))
		b.mu.Unlock()
		return f.File.ReadAt(p, off)
	}
	cont.f, cont.busy, cont.used = f, true, b.tick
	cont.win.buf = cont.win.buf[:0]
	b.mu.Unlock()
	if cap(cont.win.buf) == 0 {
		cont.win.buf = make([]byte, 0, b.size)
	}
	n, err := f.File.ReadAt(cont.win.buf[:b.size], off)
	if err != nil && err != io.EOF {
		n = 0
	}
	b.mu.Lock()
	cont.win.buf, cont.win.off = cont.win.buf[:n], off
	cont.busy = false
	ok := cont.win.copyOut(p, off)
	if ok {
		cont.next = off + int64(len(p))
	}
	b.mu.Unlock()
	if !ok { // the end of the file, or an error: the file's own answer
		return f.File.ReadAt(p, off)
	}
	return len(p), nil
}

// continues says whether a read without a buffer ended at off in f
// (forgetting it). b.mu is held.
func (b *ReadBuffers) continues(f *bufferedFile, off int64) bool {
	for i := range b.ends {
		if e := &b.ends[i]; e.f == f && e.end == off {
			*e = readEnd{}
			return true
		}
	}
	return false
}

// remember notes that a read without a buffer ended at end in f. b.mu is
// held.
func (b *ReadBuffers) remember(f *bufferedFile, end int64) {
	b.ends[b.nextEnd] = readEnd{f: f, end: end}
	b.nextEnd = (b.nextEnd + 1) % readEnds
}

// leastUsed is the buffer used least recently that is not being filled
// (nil if every one is). b.mu is held.
func (b *ReadBuffers) leastUsed() *readBuffer {
	var lru *readBuffer
	for i := range b.bufs {
		rb := &b.bufs[i]
		if !rb.busy && (lru == nil || rb.used < lru.used) {
			lru = rb
		}
	}
	return lru
}

// Close forgets f's buffers and read ends before it closes the file.
func (f *bufferedFile) Close() error {
	b := f.b
	b.mu.Lock()
	for i := range b.bufs {
		if rb := &b.bufs[i]; rb.f == f && !rb.busy {
			rb.f, rb.next = nil, 0
			rb.win.buf = rb.win.buf[:0]
		}
	}
	for i := range b.ends {
		if b.ends[i].f == f {
			b.ends[i] = readEnd{}
		}
	}
	b.mu.Unlock()
	return f.File.Close()
}

// A fileWindow holds a file's bytes from off.
type fileWindow struct {
	buf []byte
	off int64
}

// copyOut copies the file's bytes at off into p if the window holds all
// of them, and says whether it did.
func (w *fileWindow) copyOut(p []byte, off int64) bool {
	if off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		return false
	}
	copy(p, w.buf[off-w.off:])
	return true
}

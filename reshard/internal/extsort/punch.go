package extsort

import (
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A section is read once, front to back, and removed once merged. On
// Linux, on the operating system's file system, what the merge has read
// of it is cut out of the file as the merge goes (a hole punched:
// fallocate(FALLOC_FL_PUNCH_HOLE)), every punchStep bytes: its pages
// leave the page cache (unwritten ones are never written) and its blocks
// return to the file system while the new stores are being written,
// instead of when the whole section is removed. Elsewhere, or where the
// file system refuses, nothing is cut and the section is removed as
// before.

// punchStep is how much of a section is read between two cuts.
var punchStep int64 = 1 << 20

// punchAlign is the granularity of a cut: a page.
const punchAlign = 4096

// cuts counts the cuts made (for the tests: that the merges made some).
var cuts atomic.Int64

// sectionReader reads a section's size bytes from f, from the start,
// cutting out what it has read (cut; nil: nothing is cut).
type sectionReader struct {
	f         vfs.File
	off, size int64
	cutTo     int64 // bytes [0, cutTo) are cut
	cut       *holePuncher
}

func (r *sectionReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.size-r.off)]
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF {
		err = nil
		if r.off < r.size { // the file is shorter than its section
			err = io.ErrUnexpectedEOF
		}
	}
	if r.cut != nil && r.off-r.cutTo >= punchStep {
		// What the reader above has not given out yet is in its buffer
		// already: the file's bytes up to off are never read again.
		to := r.off / punchAlign * punchAlign
		if !r.cut.punch(r.cutTo, to-r.cutTo) {
			r.cut.close()
			r.cut = nil
		} else {
			cuts.Add(1)
		}
		r.cutTo = to
	}
	return n, err
}

// close closes what cutting opened.
func (r *sectionReader) close() {
	if r.cut != nil {
		r.cut.close()
		r.cut = nil
	}
}

// newSectionReader reads the section at path, open as f, of size bytes,
// cutting what it has read where it can.
func newSectionReader(fs vfs.FS, path string, f vfs.File, size int64) *sectionReader {
	r := &sectionReader{f: f, size: size}
	if vfs.Root(fs) == vfs.Default {
		r.cut = openPuncher(path)
	}
	return r
}

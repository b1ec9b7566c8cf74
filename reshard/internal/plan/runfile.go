package plan

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// Pass 1's files (docs/reshard.md §4, "Past the compact map"). When the
// runs outgrow the compact map, each old shard's runs go to a run file of
// its own, in the order pass 1 reads them (ascending number), as fixed
// records
//
//	old number (6 bytes), dst (2: new shard, unfinished, renumbered before), generation (4)
//
// written by the shard's own worker, sequentially: no lock, no sort. The
// runs the compact map already held go first, from its arrays, which hold
// the same. The paged map's assignment (assignpaged.go) reads them back.
//
// When a plan file is made or applied, each old shard's runs also go to a
// details file, whatever the map, as records
//
//	old number (6), state (1), generation (4), workflow ID (uvarint length, bytes)
//
// from which Plan.EachRun lists the runs with what the plan file says of
// them.

// runRecord is the size of a run file's record.
const runRecord = 12

// fileBuffer is the buffer of a run or details file being written or read.
const fileBuffer = 64 << 10

// A recordWriter appends records to a new scratch file.
type recordWriter struct {
	path string
	f    vfs.File
	w    *bufio.Writer
	n    int64  // records written
	last uint64 // the last record's number
}

func createRecords(fs vfs.FS, path string) (*recordWriter, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("plan scratch file: %w", err)
	}
	return &recordWriter{path: path, f: f, w: bufio.NewWriterSize(f, fileBuffer)}, nil
}

// order checks that no comes after the records written so far.
func (w *recordWriter) order(no uint64) error {
	if w.n > 0 && no <= w.last {
		return fmt.Errorf("internal error: %s: run %d after run %d", w.path, no, w.last)
	}
	w.n++
	w.last = no
	return nil
}

// addRun appends a run file's record.
func (w *recordWriter) addRun(r passRun) error {
	if err := w.order(r.no); err != nil {
		return err
	}
	var b [runRecord]byte
	put48(b[:], r.no)
	binary.BigEndian.PutUint16(b[6:], r.d)
	binary.BigEndian.PutUint32(b[8:], r.gen)
	_, err := w.w.Write(b[:])
	return err
}

// addDetails appends a details file's record.
func (w *recordWriter) addDetails(no model.RunNo, run *model.RunEntry) error {
	if err := w.order(uint64(no)); err != nil {
		return err
	}
	var b [11 + binary.MaxVarintLen64]byte
	put48(b[:], uint64(no))
	b[6] = byte(run.State)
	binary.BigEndian.PutUint32(b[7:], run.Gen)
	n := binary.PutUvarint(b[11:], uint64(len(run.WorkflowID)))
	if _, err := w.w.Write(b[:11+n]); err != nil {
		return err
	}
	_, err := w.w.WriteString(run.WorkflowID)
	return err
}

// close flushes and closes the file (idempotent).
func (w *recordWriter) close() error {
	if w == nil || w.f == nil {
		return nil
	}
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return fmt.Errorf("plan scratch file %s: %w", w.path, err)
	}
	return nil
}

// A recordReader reads a scratch file of records back.
type recordReader struct {
	path string
	f    vfs.File
	r    *bufio.Reader
	err  error
}

// openRecords opens path to read (an empty reader for "": no file).
func openRecords(fs vfs.FS, path string, buf int) (*recordReader, error) {
	if path == "" {
		return &recordReader{}, nil
	}
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan scratch file: %w", err)
	}
	return &recordReader{path: path, f: f, r: bufio.NewReaderSize(f, buf)}, nil
}

// read fills b with the next bytes; false at the end (or on an error,
// kept in err).
func (r *recordReader) read(b []byte) bool {
	if r.f == nil || r.err != nil {
		return false
	}
	if _, err := io.ReadFull(r.r, b); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = fmt.Errorf("plan scratch file %s: %w", r.path, err)
		}
		return false
	}
	return true
}

func (r *recordReader) close() error {
	if r.f == nil {
		return r.err
	}
	err := r.f.Close()
	r.f = nil
	if r.err != nil {
		return r.err
	}
	return err
}

// A runFileCursor reads a run file for mergeRuns.
type runFileCursor struct{ *recordReader }

func (c *runFileCursor) next() (passRun, bool) {
	var b [runRecord]byte
	if !c.read(b[:]) {
		return passRun{}, false
	}
	return passRun{no: get48(b[:]), d: binary.BigEndian.Uint16(b[6:]), gen: binary.BigEndian.Uint32(b[8:])}, true
}

// readDetails reads a details file's next record into no and run; false
// at the end.
func (r *recordReader) readDetails(no *model.RunNo, run *model.RunEntry) bool {
	var b [11]byte
	if !r.read(b[:]) {
		return false
	}
	*no = model.RunNo(get48(b[:]))
	run.State = model.RunState(b[6])
	run.Gen = binary.BigEndian.Uint32(b[7:])
	n, err := binary.ReadUvarint(r.r)
	if err == nil {
		wf := make([]byte, n)
		_, err = io.ReadFull(r.r, wf)
		run.WorkflowID = string(wf)
	}
	if err != nil {
		r.err = fmt.Errorf("plan scratch file %s: %w", r.path, err)
		return false
	}
	return true
}

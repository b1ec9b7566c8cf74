package wal

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Pebble's record wire format (documented in its package comment): 32 KiB
// blocks of chunks; a recyclable chunk header is CRC (4) | length (2) |
// type (1) | log number (4). The LogWriter pads a block tail too short for
// another header with zeros. Positions and the damage scan depend on these
// numbers; TestPositionsFollowPadding pins them.
const (
	blockSize            = 32 << 10
	recyclableHeaderSize = 11
)

// recordStart is where the record after one that ended at off starts: the
// LogWriter moves to the next block when fewer than a header's bytes are
// left in this one. The reader only sees where the previous record ended;
// the writer only sees where the next one starts; this reconciles them.
func recordStart(off int64) int64 {
	if rem := blockSize - off%blockSize; rem < recyclableHeaderSize {
		return off + rem
	}
	return off
}

// newLogWriter and newRecordReader give pebble the segment number as the log
// number it stamps into (and checks in) every chunk header. Pebble's log
// number type lives in an internal package, so it cannot be named here; the
// type parameter lets the compiler take it from the constructor's signature.
func newLogWriter[N ~uint64](ctor func(io.Writer, N, record.LogWriterConfig) *record.LogWriter, w io.Writer, seg uint64) *record.LogWriter {
	return ctor(w, N(seg), record.LogWriterConfig{
		// Recyclable chunks, not the WAL-sync chunks: the sync offsets those
		// carry are only maintained when a latency histogram is configured,
		// and this package classifies damage itself (see scan.go).
		WriteWALSyncOffsets: func() bool { return false },
	})
}

func newRecordReader[N ~uint64](ctor func(io.Reader, N) *record.Reader, r io.Reader, seg uint64) *record.Reader {
	return ctor(r, N(seg))
}

// segmentWriter writes one segment file through pebble's LogWriter.
type segmentWriter struct {
	seg    uint64
	path   string
	lw     *record.LogWriter
	closed bool
}

// createSegment creates segment seg in dir with the given header record, so
// that a file with a segment's name always starts with a durable header: the
// file is written under a temporary name, synced, renamed, and the directory
// synced.
func createSegment(fs vfs.FS, dir string, seg uint64, header []byte) (*segmentWriter, error) {
	path := fs.PathJoin(dir, segmentName(seg))
	tmp := path + tempSuffix
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("wal: creating %s: %w", tmp, err)
	}
	s := &segmentWriter{seg: seg, path: path, lw: newLogWriter(record.NewLogWriter, f, seg)}
	fail := func(err error) (*segmentWriter, error) {
		_ = s.lw.Close() // closes f too
		_ = fs.Remove(tmp)
		return nil, err
	}
	if err := s.writeSync(header); err != nil {
		return fail(err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("wal: renaming %s: %w", tmp, err))
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		// The segment exists under its name and is closed with the writer;
		// the writer is unusable after a failed sync anyway.
		_ = s.lw.Close()
		return nil, err
	}
	return s, nil
}

// size is the segment's length so far, counting buffered bytes: where the
// next record will start.
func (s *segmentWriter) size() int64 { return s.lw.Size() }

// write hands p to the record writer without waiting for it to reach the
// file.
func (s *segmentWriter) write(p []byte) error {
	if _, err := s.lw.WriteRecord(p); err != nil {
		return fmt.Errorf("wal: writing %s: %w", s.path, err)
	}
	return nil
}

// writeSync writes p and returns once it and everything before it is
// written and fsynced.
func (s *segmentWriter) writeSync(p []byte) error {
	var wg sync.WaitGroup
	var syncErr error
	wg.Add(1)
	if _, err := s.lw.SyncRecord(p, &wg, &syncErr); err != nil {
		return fmt.Errorf("wal: writing %s: %w", s.path, err)
	}
	wg.Wait()
	if syncErr != nil {
		return fmt.Errorf("wal: syncing %s: %w", s.path, syncErr)
	}
	return nil
}

// close writes pebble's end-of-log trailer, flushes, syncs and closes the
// file.
func (s *segmentWriter) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.lw.Close(); err != nil {
		return fmt.Errorf("wal: closing %s: %w", s.path, err)
	}
	return nil
}

// DefaultSegmentSize is the segment size target when Options leave it zero.
const DefaultSegmentSize = 64 << 20

// Options configure a writer.
type Options struct {
	// SegmentSize is the target size of a segment file: an append that finds
	// the current segment at or above it first starts a new one. Zero means
	// DefaultSegmentSize.
	SegmentSize int64
	// NoSync skips the fsync after each batch, for bulk generation: nothing
	// is durable, nor acknowledged in the sense of the recovery rules, until
	// Sync or Close returns. A crash in between can leave a log that reads as
	// damaged; regenerate it.
	NoSync bool
	// LogID identifies a new shared log (Create only); zero picks a random
	// one. Tests and fixtures set it to get the same bytes every time.
	LogID uint64
}

func (o Options) segmentSize() int64 {
	if o.SegmentSize <= 0 {
		return DefaultSegmentSize
	}
	return o.SegmentSize
}

// segmentLog is the part of a writer that both log formats share: the
// current segment, rotation, NoSync buffering, and the rule that after a
// failed write or sync nothing more is written (a failed fsync may have
// dropped data the kernel had accepted; retrying would hide that).
type segmentLog struct {
	fs   vfs.FS
	dir  string
	opts Options
	cur  *segmentWriter
	// header builds the header of a new segment from the writer's state.
	header func(seg, prevSeg uint64, prevEnd int64) []byte
	// end builds the end record of segment seg, which the writer finished
	// (closed: by closing the log); nil for a log format without end
	// records (format 2), whose Close only ends the segment with pebble's
	// trailer.
	end func(seg uint64, closed bool) []byte
	// pending is, in NoSync mode, the last batch appended: kept back from the
	// record writer so that Sync can hand it over with a sync request (the
	// LogWriter only syncs along with a record).
	pending []byte
	spare   []byte
	err     error
}

// buffer returns an empty buffer to encode the next batch into; pass it to
// append. The log gives up the buffer: in NoSync mode it may be the pending
// batch's next time round.
func (l *segmentLog) buffer() []byte {
	b := l.spare[:0]
	l.spare = nil
	return b
}

func (l *segmentLog) fail(err error) error {
	if l.err == nil {
		l.err = err
	}
	return err
}

// append writes one encoded batch and returns where it starts. It takes
// ownership of p.
func (l *segmentLog) append(p []byte) (Position, error) {
	if l.err != nil {
		return Position{}, l.err
	}
	if err := l.writePending(); err != nil {
		return Position{}, err
	}
	if l.cur.size() >= l.opts.segmentSize() {
		if err := l.rotate(); err != nil {
			return Position{}, err
		}
	}
	pos := Position{Segment: l.cur.seg, Offset: l.cur.size()}
	if l.opts.NoSync {
		l.pending = p
		return pos, nil
	}
	if err := l.cur.writeSync(p); err != nil {
		return Position{}, l.fail(err)
	}
	l.spare = p
	return pos, nil
}

// writePending hands the kept-back batch to the record writer.
func (l *segmentLog) writePending() error {
	if l.pending == nil {
		return nil
	}
	if err := l.cur.write(l.pending); err != nil {
		return l.fail(err)
	}
	l.spare, l.pending = l.pending, nil
	return nil
}

// nextPosition is where the next batch will start unless the log moves to a
// new segment first (reading from it is valid either way).
func (l *segmentLog) nextPosition() (Position, error) {
	if l.err != nil {
		return Position{}, l.err
	}
	if err := l.writePending(); err != nil {
		return Position{}, err
	}
	return Position{Segment: l.cur.seg, Offset: l.cur.size()}, nil
}

func (l *segmentLog) rotate() error { return l.finish(false) }

// finish ends the current segment and starts the next one. The next
// segment is created first, its header declaring where this one's batches
// end, and only then is this one ended (its end record, for a format 3
// log, then pebble's trailer): so a segment that ends with a trailer always
// has a successor, and a last segment that ends with one is a sign that
// later segments are missing. closing makes the next segment the log's
// close segment: it keeps only its header, the end record says so, and the
// log is closed.
func (l *segmentLog) finish(closing bool) error {
	if l.err != nil {
		return l.err
	}
	// The next header vouches for every byte up to end: they must be
	// durable before it is.
	if err := l.sync(); err != nil {
		return err
	}
	prev, end := l.cur.seg, l.cur.size()
	next, err := createSegment(l.fs, l.dir, prev+1, l.header(prev+1, prev, end))
	if err != nil {
		return l.fail(err)
	}
	if closing {
		if err := next.close(); err != nil {
			_ = l.cur.close()
			return l.fail(err)
		}
	}
	if l.end != nil {
		if err := l.cur.writeSync(l.end(prev, closing)); err != nil {
			_ = next.close()
			return l.fail(err)
		}
	}
	if err := l.cur.close(); err != nil {
		_ = next.close()
		return l.fail(err)
	}
	l.cur = next
	return nil
}

func (l *segmentLog) sync() error {
	if l.err != nil {
		return l.err
	}
	if l.pending == nil {
		return nil // every batch so far went out with a sync
	}
	if err := l.cur.writeSync(l.pending); err != nil {
		return l.fail(err)
	}
	l.spare, l.pending = l.pending, nil
	return nil
}

func (l *segmentLog) close() error {
	if errors.Is(l.err, ErrClosed) {
		return ErrClosed
	}
	err := l.err
	if err == nil && l.end != nil {
		// A format 3 log closes into a close segment, so that its last
		// batches are vouched for by a header and the end record says the
		// writer closed it (docs/format-wal.md, "Clean close").
		err = l.finish(true)
	}
	if err == nil {
		err = l.writePending()
	}
	if cerr := l.cur.close(); err == nil {
		err = cerr
	}
	l.err = ErrClosed
	return err
}

package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Tail is what a read found at the end of the log: the state a writer
// continuing the log (OpenAppend) starts from.
type Tail struct {
	// LogID identifies a shared log; 0 for format 2.
	LogID uint64
	// LastBatch is the number of the last good batch and LastSum its
	// checksum (format 3; 0 if the log holds no batch).
	LastBatch uint64
	LastSum   uint32
	// NextLSN is every shard's next LSN (1 for a shard with no entries).
	// A format 2 read fills in only its shard; the others stay 1.
	NextLSN [meta.MaxShards]uint64
	// End is just past the last good batch: where the log continues.
	End Position
	// Torn is the never-acknowledged tail the read dropped, if any.
	Torn *TornTail
}

// Read reads the shared log in dir from the batch at from (the zero Position
// means the log's first segment) to its end, calling fn for each batch in
// order, and returns the log's tail. The Batch passed to fn, its sections
// and entries, are only valid during the call: the next batch reuses their
// memory. An error from fn stops the read and is returned as is.
//
// Read checks every batch against the chain: numbers consecutive, each batch
// naming the checksum of the one before, each shard's LSNs consecutive, and
// segments linked by their headers. A never-acknowledged tail at the end of
// the last segment is dropped and reported in Tail.Torn. Damage anywhere
// else is a *CorruptError.
//
// Reading starts at the beginning of from's segment whatever from's offset,
// so that the batches before from are checked against the segment header
// too; fn sees only the batches from on.
//
// Read never writes; the directory's bytes do not change.
func Read(fs vfs.FS, dir string, from Position, fn func(b Batch) error) (Tail, error) {
	ch := &chainV3{}
	r := logReader{fs: fs, dir: dir, ch: ch, fn: fn}
	end, torn, err := r.read(from)
	if err != nil {
		return Tail{}, err
	}
	return Tail{LogID: ch.logID, LastBatch: ch.last, LastSum: ch.lastSum, NextLSN: ch.next, End: end, Torn: torn}, nil
}

// chain is what a log format checks about a read in progress; logReader
// does everything else.
type chain interface {
	// header checks a segment's header. first says the read starts in this
	// segment: its header then anchors the chain instead of continuing it.
	header(h *segmentHeader, first bool) error
	// batch decodes a record into b and checks that it continues the chain,
	// advancing the chain only if it does.
	batch(p []byte, b *Batch) error
	// later reports whether a record is an intact batch of this log that
	// comes after the last batch accepted: proof that the log went on past a
	// damaged record.
	later(p []byte) bool
}

type logReader struct {
	fs  vfs.FS
	dir string
	ch  chain
	fn  func(Batch) error
	b   Batch
	buf []byte
}

func (r *logReader) read(from Position) (Position, *TornTail, error) {
	segs, err := listSegments(r.fs, r.dir)
	if err != nil {
		return Position{}, nil, err
	}
	if len(segs) == 0 {
		return Position{}, nil, fmt.Errorf("wal: %s holds no log segments", r.dir)
	}
	start := 0
	if from.Segment != 0 {
		var found bool
		start, found = slices.BinarySearch(segs, from.Segment)
		if !found {
			if from.Segment < segs[0] {
				return Position{}, nil, fmt.Errorf("wal: reading %s from %s: %w: it now starts at %s (the segments before were removed after a checkpoint)",
					r.dir, from, ErrPositionRemoved, segmentName(segs[0]))
			}
			return Position{}, nil, fmt.Errorf("wal: reading %s from %s: no such segment (the log ends in %s)",
				r.dir, from, segmentName(segs[len(segs)-1]))
		}
	} else if from.Offset != 0 {
		return Position{}, nil, fmt.Errorf("wal: position %+v names no segment", from)
	}
	var end Position
	for i := start; i < len(segs); i++ {
		seg := segs[i]
		declaredEnd := int64(-1)
		if i+1 < len(segs) {
			next := r.fs.PathJoin(r.dir, segmentName(segs[i+1]))
			h, err := readSegmentHeader(r.fs, next, segs[i+1])
			if err != nil {
				return Position{}, nil, err
			}
			if h.prevSegment != seg {
				missing := ""
				if h.prevSegment > seg {
					missing = "a segment is missing before it: "
				}
				return Position{}, nil, &CorruptError{File: next, Offset: 0, Reason: fmt.Sprintf(
					"%sits header names %s as the segment before it, but the directory's previous segment is %s",
					missing, segmentName(h.prevSegment), segmentName(seg))}
			}
			declaredEnd = h.prevEnd
		}
		offset := int64(0)
		if i == start {
			offset = from.Offset
		}
		endOffset, torn, err := r.readSegment(seg, i == start, offset, declaredEnd)
		if err != nil {
			return Position{}, nil, err
		}
		end = Position{Segment: seg, Offset: endOffset}
		if torn != nil {
			return end, torn, nil
		}
	}
	return end, nil, nil
}

// readSegment reads one segment, calling fn for the batches at or after
// from. declaredEnd is where the next segment's header says this segment's
// batches end, or -1 for the last segment; bytes past it are a tail an
// earlier recovery dropped and are not read. It returns the offset just past
// the last good batch.
func (r *logReader) readSegment(seg uint64, first bool, from, declaredEnd int64) (int64, *TornTail, error) {
	path := r.fs.PathJoin(r.dir, segmentName(seg))
	f, err := r.fs.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("wal: opening %s: %w", path, err)
	}
	defer f.Close()
	rr := newRecordReader(record.NewReader, f, seg)
	h, err := r.readHeader(rr, path, seg)
	if err != nil {
		return 0, nil, err
	}
	if err := r.ch.header(&h, first); err != nil {
		return 0, nil, &CorruptError{File: path, Offset: 0, Reason: err.Error()}
	}
	off := recordStart(rr.Offset())
	reached := from == 0 // whether the read has reached from
	for {
		if declaredEnd >= 0 && off >= declaredEnd {
			if off > declaredEnd {
				return 0, nil, &CorruptError{File: path, Offset: declaredEnd, Reason: fmt.Sprintf(
					"the next segment's header says this segment's batches end at offset %d, but a record runs past it to %d",
					declaredEnd, off)}
			}
			break
		}
		if !reached {
			if off > from {
				return 0, nil, notABatch(f, path, from)
			}
			reached = off == from
		}
		p, err := r.readRecord(rr)
		var reason string
		if err == io.EOF {
			extra, err := r.bytesAfterEnd(f, path, off, declaredEnd)
			if err != nil {
				return 0, nil, err
			}
			if extra == 0 {
				break
			}
			reason = fmt.Sprintf("the record reader found the end of the log, but %d bytes follow", extra)
		}
		switch {
		case reason != "":
		case err != nil && !isRecordDamage(err):
			return 0, nil, fmt.Errorf("wal: reading %s: %w", path, err)
		case err != nil:
			reason = recordDamage(err)
		default:
			if err := r.ch.batch(p, &r.b); err != nil {
				reason = err.Error()
				break
			}
			if reached && r.fn != nil {
				r.b.Pos = Position{Segment: seg, Offset: off}
				if err := r.fn(r.b); err != nil {
					return 0, nil, err
				}
			}
			off = recordStart(rr.Offset())
			continue
		}
		torn, err := r.classify(f, path, seg, off, declaredEnd, reason)
		if err != nil {
			return 0, nil, err
		}
		if !reached && off != from {
			return 0, nil, notABatch(f, path, from)
		}
		return off, torn, nil
	}
	if declaredEnd >= 0 && off != declaredEnd {
		return 0, nil, &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
			"the segment ends here, but the next segment's header says its batches run to offset %d: acknowledged batches are missing",
			declaredEnd)}
	}
	if !reached && off != from {
		return 0, nil, notABatch(f, path, from)
	}
	return off, nil, nil
}

// bytesAfterEnd checks the end of the last segment, where pebble's reader
// stopped cleanly at off: either the file ends there, or pebble's
// end-of-log trailer (a bare chunk header) ends it. Pebble recognises the
// trailer by its log number alone, so a damaged log number can pass a
// record off as one; bytes beyond a trailer's length return how many.
func (r *logReader) bytesAfterEnd(f vfs.File, path string, off, declaredEnd int64) (int64, error) {
	if declaredEnd >= 0 {
		return 0, nil // the next segment's header says where this one ends
	}
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("wal: %s: %w", path, err)
	}
	if rest := st.Size() - off; rest > recyclableHeaderSize {
		return rest, nil
	}
	return 0, nil
}

// classify decides what a bad record at off is. In a segment that a later
// one follows, it is damage: the later segment's header vouches for every
// byte up to declaredEnd. In the last segment it is a torn, never
// acknowledged tail, unless an intact later batch of this log follows it in
// the file: batches are written in order and each is synced before the next
// is written, so a later batch proves this one was acknowledged.
func (r *logReader) classify(f vfs.File, path string, seg uint64, off, declaredEnd int64, reason string) (*TornTail, error) {
	if declaredEnd >= 0 {
		return nil, &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
			"%s, but the next segment's header says this segment's batches run to offset %d", reason, declaredEnd)}
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("wal: %s: %w", path, err)
	}
	size := st.Size()
	later, found, err := findLaterRecord(f, size, seg, off, r.ch.later)
	if err != nil {
		return nil, fmt.Errorf("wal: scanning %s: %w", path, err)
	}
	if found {
		return nil, &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
			"%s, and an intact later batch of this log starts at offset %d", reason, later)}
	}
	return &TornTail{File: path, Offset: off, Bytes: size - off, Reason: reason}, nil
}

// NoBatchError is a read asked to start where no batch starts: inside a
// batch, or past the end of the segment (a log cut short below the
// position its reader resumes from).
type NoBatchError struct {
	File   string // the segment file
	Offset int64  // where the read was to start
	Size   int64  // the file's size in bytes, -1 if unknown
}

func (e *NoBatchError) Error() string {
	return fmt.Sprintf("wal: no batch starts at offset %d of %s (the file is %d bytes)", e.Offset, e.File, e.Size)
}

// CutShort reports whether the file ends at or before Offset.
func (e *NoBatchError) CutShort() bool { return e.Size >= 0 && e.Size <= e.Offset }

func notABatch(f vfs.File, path string, from int64) error {
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return &NoBatchError{File: path, Offset: from, Size: size}
}

// readHeader reads and checks a segment's first record.
func (r *logReader) readHeader(rr *record.Reader, path string, seg uint64) (segmentHeader, error) {
	p, err := r.readRecord(rr)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if !isRecordDamage(err) {
			return segmentHeader{}, fmt.Errorf("wal: reading %s: %w", path, err)
		}
		return segmentHeader{}, &CorruptError{File: path, Offset: 0, Reason: "unreadable segment header: " + recordDamage(err)}
	}
	h, err := decodeHeader(p)
	if err != nil {
		return h, &CorruptError{File: path, Offset: 0, Reason: err.Error()}
	}
	if h.segment != seg {
		return h, &CorruptError{File: path, Offset: 0, Reason: fmt.Sprintf("the header says this is segment %d", h.segment)}
	}
	return h, nil
}

// readSegmentHeader reads the header of the segment file at path.
func readSegmentHeader(fs vfs.FS, path string, seg uint64) (segmentHeader, error) {
	f, err := fs.Open(path)
	if err != nil {
		return segmentHeader{}, fmt.Errorf("wal: opening %s: %w", path, err)
	}
	defer f.Close()
	var r logReader
	return r.readHeader(newRecordReader(record.NewReader, f, seg), path, seg)
}

// readRecord reads the next record whole into r's buffer.
func (r *logReader) readRecord(rr *record.Reader) ([]byte, error) {
	rec, err := rr.Next()
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(r.buf[:0])
	_, err = b.ReadFrom(rec)
	r.buf = b.Bytes()
	return r.buf, err
}

// isRecordDamage reports whether err is pebble's record reader saying the
// bytes are not an intact record (as opposed to an I/O error).
func isRecordDamage(err error) bool {
	return errors.Is(err, record.ErrInvalidChunk) || errors.Is(err, record.ErrZeroedChunk) ||
		errors.Is(err, record.ErrUnexpectedEOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// chainV3 holds the state a shared log's next batch must continue.
type chainV3 struct {
	logID   uint64
	last    uint64
	lastSum uint32
	next    [meta.MaxShards]uint64
	scratch Batch
}

func (c *chainV3) header(h *segmentHeader, first bool) error {
	if h.format != FormatShared {
		return fmt.Errorf("a segment of log format %d in a format %d log", h.format, FormatShared)
	}
	var next [meta.MaxShards]uint64
	for i := range next {
		next[i] = 1
	}
	for _, s := range h.next {
		next[s.shard] = s.next
	}
	if first {
		c.logID, c.last, c.lastSum, c.next = h.logID, h.lastBatch, h.lastSum, next
		return nil
	}
	if h.logID != c.logID {
		return fmt.Errorf("the segment belongs to another log (log id %016x, not %016x)", h.logID, c.logID)
	}
	if h.lastBatch != c.last || h.lastSum != c.lastSum {
		return fmt.Errorf("the header says the batch before this segment is %d with checksum %08x, but the previous segment ends with batch %d with checksum %08x",
			h.lastBatch, h.lastSum, c.last, c.lastSum)
	}
	for shard := range next {
		if next[shard] != c.next[shard] {
			return fmt.Errorf("the header gives shard %d next LSN %d, but the batches before it give %d", shard, next[shard], c.next[shard])
		}
	}
	return nil
}

func (c *chainV3) batch(p []byte, b *Batch) error {
	logID, prevSum, err := decodeBatchV3(p, b)
	if err != nil {
		return err
	}
	if logID != c.logID {
		return fmt.Errorf("a batch of another log (log id %016x, not %016x)", logID, c.logID)
	}
	if b.Number != c.last+1 {
		return fmt.Errorf("batch %d where batch %d belongs", b.Number, c.last+1)
	}
	if prevSum != c.lastSum {
		return fmt.Errorf("batch %d does not chain: it names %08x as the previous batch's checksum, which is %08x",
			b.Number, prevSum, c.lastSum)
	}
	for _, s := range b.Sections {
		if s.FirstLSN != c.next[s.Shard] {
			return fmt.Errorf("batch %d gives shard %d LSN %d where LSN %d belongs", b.Number, s.Shard, s.FirstLSN, c.next[s.Shard])
		}
	}
	c.last, c.lastSum = b.Number, batchSum(p)
	for _, s := range b.Sections {
		c.next[s.Shard] += uint64(len(s.Entries))
	}
	return nil
}

func (c *chainV3) later(p []byte) bool {
	logID, _, err := decodeBatchV3(p, &c.scratch)
	return err == nil && logID == c.logID && c.scratch.Number > c.last
}

package wal

import (
	"bytes"
	"encoding/binary"
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
	// Torn is the tail the read dropped, if any: bytes after the last good
	// batch of a log whose writer stopped without closing it (Ending is
	// EndStopped).
	Torn *TornTail
	// Ending says how the log ends, and so what the read can prove about
	// its last batches.
	Ending Ending
	// Whole says the read began at the log's first segment (from was in
	// it, or was the zero Position): every batch of the log was read and
	// checked, as a read from the zero Position reads them, and the rest
	// of Tail is what that read returns.
	Whole bool
}

// Ending is how a log ends: what a read found after its last good batch.
type Ending int

const (
	// EndClosed: the log was closed cleanly. The segment before the last
	// ends with an end record saying the writer closed the log, and the
	// last segment (the close segment) holds only its header, which
	// vouches for every byte of the batches before it: damage to any of
	// them is a *CorruptError, never a torn tail.
	EndClosed Ending = iota + 1
	// EndStopped: the writer stopped without closing the log (a crash, a
	// kill, a power cut): the last segment ends after its last good batch
	// with no trailer, or with bytes that are not an intact batch
	// (Tail.Torn). Those bytes are what a batch being written when the
	// writer stopped would leave: a sync-mode writer had not acknowledged
	// it. The read cannot tell them from a damaged last batch of a log that
	// no later record vouches for.
	EndStopped
	// EndUnproven: the last segment ends with pebble's end-of-log trailer
	// but carries no close evidence: a log closed by a fusee that wrote no
	// end records (before log format 3 gained them), or whose writer
	// stopped while closing. Segments after it may have been lost; nothing
	// in the log can say.
	EndUnproven
)

func (e Ending) String() string {
	switch e {
	case EndClosed:
		return "closed cleanly"
	case EndStopped:
		return "stopped without closing"
	case EndUnproven:
		return "ended without close evidence"
	}
	return fmt.Sprintf("Ending(%d)", int(e))
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
	end, torn, ending, err := r.read(from)
	if err != nil {
		return Tail{}, err
	}
	return Tail{LogID: ch.logID, LastBatch: ch.last, LastSum: ch.lastSum, NextLSN: ch.next, End: end, Torn: torn, Ending: ending, Whole: r.whole}, nil
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
	// comes after the last batch accepted, or an end record of this log:
	// proof that the log went on past a damaged record.
	later(p []byte) bool
	// ended decodes a record as an end record of this log (format 3 only).
	ended(p []byte) (endRecord, bool)
	// torn reads what the readable prefix p of a dropped record claims, as
	// far as it continues the chain (TornTail.Batch and Sections).
	torn(p []byte) (uint64, []TornSection)
}

type logReader struct {
	fs  vfs.FS
	dir string
	ch  chain
	fn  func(Batch) error
	b   Batch
	buf []byte
	// whole: the read began at the first segment (Tail.Whole).
	whole bool
}

func (r *logReader) read(from Position) (Position, *TornTail, Ending, error) {
	fail := func(err error) (Position, *TornTail, Ending, error) { return Position{}, nil, 0, err }
	segs, err := listSegments(r.fs, r.dir)
	if err != nil {
		return fail(err)
	}
	if len(segs) == 0 {
		return fail(fmt.Errorf("wal: %s holds no log segments", r.dir))
	}
	start := 0
	if from.Segment != 0 {
		var found bool
		start, found = slices.BinarySearch(segs, from.Segment)
		if !found {
			if from.Segment < segs[0] {
				return fail(fmt.Errorf("wal: reading %s from %s: %w: it now starts at %s (the segments before were removed after a checkpoint)",
					r.dir, from, ErrPositionRemoved, segmentName(segs[0])))
			}
			return fail(fmt.Errorf("wal: reading %s from %s: no such segment (the log ends in %s)",
				r.dir, from, segmentName(segs[len(segs)-1])))
		}
	} else if from.Offset != 0 {
		return fail(fmt.Errorf("wal: position %+v names no segment", from))
	}
	r.whole = start == 0
	var end Position
	for i := start; i < len(segs); i++ {
		seg := segs[i]
		declaredEnd := int64(-1)
		closed := false
		if i+1 < len(segs) {
			next := r.fs.PathJoin(r.dir, segmentName(segs[i+1]))
			h, err := readSegmentHeader(r.fs, next, segs[i+1])
			if err != nil {
				return fail(err)
			}
			if h.prevSegment != seg {
				missing := ""
				if h.prevSegment > seg {
					missing = "a segment is missing before it: "
				}
				return fail(&CorruptError{File: next, Offset: 0, Reason: fmt.Sprintf(
					"%sits header names %s as the segment before it, but the directory's previous segment is %s",
					missing, segmentName(h.prevSegment), segmentName(seg))})
			}
			declaredEnd = h.prevEnd
		} else if closed, err = r.closedInto(segs, i); err != nil {
			return fail(err)
		}
		offset := int64(0)
		if i == start {
			offset = from.Offset
		}
		endOffset, torn, ending, err := r.readSegment(seg, i == start, offset, declaredEnd, closed)
		if err != nil {
			return fail(err)
		}
		end = Position{Segment: seg, Offset: endOffset}
		if torn != nil || i+1 == len(segs) {
			return end, torn, ending, nil
		}
	}
	panic("unreachable")
}

// closedInto reports whether the last segment, segs[i], is a close segment:
// whether the segment before it ends with an intact end record saying the
// writer closed the log into it. The end record lies past the end the last
// segment's header declares for that segment, where a read of the batches
// stops. An end record that does not match the chain, or one that is
// damaged although its framing and pebble's trailer after it are intact (a
// writer writes the trailer only once the end record is synced), is
// damage.
func (r *logReader) closedInto(segs []uint64, i int) (bool, error) {
	seg := segs[i]
	path := r.fs.PathJoin(r.dir, segmentName(seg))
	h, err := readSegmentHeader(r.fs, path, seg)
	if err != nil {
		return false, err
	}
	if h.format != FormatShared || h.prevSegment == 0 || i == 0 || segs[i-1] != h.prevSegment {
		return false, nil // no end records in format 2; the previous segment was removed, or the read reports the mismatch
	}
	prevPath := r.fs.PathJoin(r.dir, segmentName(h.prevSegment))
	f, err := r.fs.Open(prevPath)
	if err != nil {
		return false, fmt.Errorf("wal: opening %s: %w", prevPath, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("wal: %s: %w", prevPath, err)
	}
	size := st.Size()
	if h.prevEnd >= size || size-h.prevEnd > maxEndRegion {
		// Nothing after the batches (a short file is the batch read's to
		// report), or more than an end record and a trailer: a tail an
		// earlier recovery dropped.
		return false, nil
	}
	rest := make([]byte, size-h.prevEnd)
	if _, err := f.ReadAt(rest, h.prevEnd); err != nil && err != io.EOF {
		return false, fmt.Errorf("wal: reading %s: %w", prevPath, err)
	}
	var payload bytes.Buffer
	if readRecordAt(rest, h.prevEnd%blockSize, h.prevSegment, &payload) {
		e, err := decodeEndRecord(payload.Bytes())
		if err == nil && e.logID == h.logID && e.segment == h.prevSegment && e.lastBatch == h.lastBatch && e.lastSum == h.lastSum {
			return e.closed, nil
		}
		if err == nil && e.logID == h.logID {
			return false, &CorruptError{File: prevPath, Offset: h.prevEnd, Reason: fmt.Sprintf(
				"its end record names segment %d and batch %d with checksum %08x, but %s's header says the segment is %d and the last batch %d with checksum %08x",
				e.segment, e.lastBatch, e.lastSum, segmentName(seg), h.prevSegment, h.lastBatch, h.lastSum)}
		}
	}
	if endRecordShaped(rest, h.prevSegment) {
		return false, &CorruptError{File: prevPath, Offset: h.prevEnd, Reason: fmt.Sprintf(
			"the %d bytes between the end of the batches and the end-of-log trailer are framed as the writer frames its end record, but are not an intact end record of this log",
			len(rest)-recyclableHeaderSize)}
	}
	return false, nil
}

// Bounds of an end record's payload: kind, log id, then three uvarints of
// 1 to 10 bytes, a u32 and the closed byte.
const (
	minEndPayload = 1 + 8 + 1 + 1 + 4 + 1 + 1
	maxEndPayload = 1 + 8 + 10 + 10 + 4 + 10 + 1
	// maxEndRegion bounds what a writer puts after a segment's batches: an
	// end record, split in two chunks at worst, block padding, and the
	// trailer.
	maxEndRegion = 3*recyclableHeaderSize + maxEndPayload + 2*(recyclableHeaderSize-1)
)

// endRecordShaped reports whether rest, the bytes of segment seg after its
// batches, has the shape a writer leaves after writing an end record and
// the trailer: one full chunk stamped for seg, of an end record's size,
// then an intact trailer. Checksums are not looked at: the shape says an
// end record was written (and is damaged if it does not read), which a
// writer stopped mid-write never leaves. The bytes a failed writer leaves
// before its trailer are a partial batch, framed otherwise; only a small
// batch written whole and then damaged would be taken for a damaged end
// record.
func endRecordShaped(rest []byte, seg uint64) bool {
	n := len(rest) - 2*recyclableHeaderSize
	if n < minEndPayload || n > maxEndPayload || !isTrailer(rest[len(rest)-recyclableHeaderSize:], seg) {
		return false
	}
	return rest[6] == recyclableFullChunk && binary.LittleEndian.Uint32(rest[7:11]) == uint32(seg) &&
		int(binary.LittleEndian.Uint16(rest[4:6])) == n
}

// isTrailer reports whether b is pebble's end-of-log trailer of segment
// seg: a full-chunk header with checksum and length 0 stamped with the next
// segment's number.
func isTrailer(b []byte, seg uint64) bool {
	return len(b) == recyclableHeaderSize && binary.LittleEndian.Uint32(b[0:4]) == 0 && binary.LittleEndian.Uint16(b[4:6]) == 0 &&
		b[6] == recyclableFullChunk && binary.LittleEndian.Uint32(b[7:11]) == uint32(seg+1)
}

// readSegment reads one segment, calling fn for the batches at or after
// from. declaredEnd is where the next segment's header says this segment's
// batches end, or -1 for the last segment; bytes past it are a tail an
// earlier recovery dropped (or the segment's end record) and are not read.
// closed says the last segment is a close segment, which holds nothing
// after its header. It returns the offset just past the last good batch
// and, for the last segment, what follows it.
func (r *logReader) readSegment(seg uint64, first bool, from, declaredEnd int64, closed bool) (int64, *TornTail, Ending, error) {
	fail := func(err error) (int64, *TornTail, Ending, error) { return 0, nil, 0, err }
	path := r.fs.PathJoin(r.dir, segmentName(seg))
	f, err := r.fs.Open(path)
	if err != nil {
		return fail(fmt.Errorf("wal: opening %s: %w", path, err))
	}
	defer f.Close()
	rr := newRecordReader(record.NewReader, f, seg)
	h, err := r.readHeader(rr, path, seg)
	if err != nil {
		return fail(err)
	}
	if err := r.ch.header(&h, first); err != nil {
		return fail(&CorruptError{File: path, Offset: 0, Reason: err.Error()})
	}
	off := recordStart(rr.Offset())
	if closed {
		if err := checkCloseSegment(f, path, seg, off); err != nil {
			return fail(err)
		}
	}
	reached := from == 0 // whether the read has reached from
	ending := EndStopped
	for {
		if declaredEnd >= 0 && off >= declaredEnd {
			if off > declaredEnd {
				return fail(&CorruptError{File: path, Offset: declaredEnd, Reason: fmt.Sprintf(
					"the next segment's header says this segment's batches end at offset %d, but a record runs past it to %d",
					declaredEnd, off)})
			}
			break
		}
		if !reached {
			if off > from {
				return fail(notABatch(f, path, from))
			}
			reached = off == from
		}
		p, err := r.readRecord(rr)
		var reason string
		if err == io.EOF {
			extra, trailer, err := r.bytesAfterEnd(f, path, off, declaredEnd)
			if err != nil {
				return fail(err)
			}
			if extra == 0 {
				if trailer {
					ending = EndUnproven
				}
				break
			}
			reason = fmt.Sprintf("the record reader found the end of the log, but %d bytes follow", extra)
		}
		switch {
		case reason != "":
		case err != nil && !isRecordDamage(err):
			return fail(fmt.Errorf("wal: reading %s: %w", path, err))
		case err != nil:
			reason = recordDamage(err)
		case closed:
			reason = "a record after the header of a close segment"
		default:
			if err := r.ch.batch(p, &r.b); err != nil {
				if e, ok := r.ch.ended(p); ok && declaredEnd < 0 {
					return fail(missingNext(path, off, &e))
				}
				reason = err.Error()
				break
			}
			if reached && r.fn != nil {
				r.b.Pos = Position{Segment: seg, Offset: off}
				if err := r.fn(r.b); err != nil {
					return fail(err)
				}
			}
			off = recordStart(rr.Offset())
			continue
		}
		if closed {
			return fail(&CorruptError{File: path, Offset: off, Reason: reason +
				"; the segment before it ends with an end record saying the log was closed here, so nothing may follow this segment's header"})
		}
		if nb := notABatch(f, path, from); !reached && nb.CutShort() {
			// The file ends before the position the read starts from: say
			// so, whatever the bytes before it are.
			return fail(nb)
		}
		torn, err := r.classify(f, path, seg, off, declaredEnd, reason)
		if err != nil {
			return fail(err)
		}
		if !reached && off != from {
			return fail(notABatch(f, path, from))
		}
		return off, torn, EndStopped, nil
	}
	if declaredEnd >= 0 && off != declaredEnd {
		return fail(&CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
			"the segment ends here, but the next segment's header says its batches run to offset %d: acknowledged batches are missing",
			declaredEnd)})
	}
	if !reached && off != from {
		return fail(notABatch(f, path, from))
	}
	if closed {
		ending = EndClosed
	}
	return off, nil, ending, nil
}

// checkCloseSegment checks that a close segment, whose header ends at off,
// holds nothing else but pebble's end-of-log trailer: its writer created it
// whole before the end record that makes it a close segment was written.
func checkCloseSegment(f vfs.File, path string, seg uint64, off int64) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %s: %w", path, err)
	}
	rest := make([]byte, max(st.Size()-off, 0))
	if _, err := f.ReadAt(rest, off); err != nil && err != io.EOF {
		return fmt.Errorf("wal: reading %s: %w", path, err)
	}
	if len(rest) == 0 || isTrailer(rest, seg) {
		return nil
	}
	return &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
		"%d bytes after the header of a close segment (the segment before it ends with an end record saying the log was closed here), where only the 11-byte end-of-log trailer belongs",
		len(rest))}
}

// missingNext is the damage an end record in the last segment proves: its
// writer created the next segment before writing it, and that segment is
// gone.
func missingNext(path string, off int64, e *endRecord) error {
	what := "went on to"
	if e.closed {
		what = "closed the log into"
	}
	return &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf(
		"the segment ends with an end record: its writer %s %s, which is missing (a writer creates it before writing the end record); the log's later segments were deleted or lost",
		what, segmentName(e.next))}
}

// bytesAfterEnd checks the end of the last segment, where pebble's reader
// stopped cleanly at off: either the file ends there, or pebble's
// end-of-log trailer (a bare chunk header) ends it (trailer says which).
// Pebble recognises the trailer by its log number alone, so a damaged log
// number can pass a record off as one; bytes beyond a trailer's length
// return how many.
func (r *logReader) bytesAfterEnd(f vfs.File, path string, off, declaredEnd int64) (extra int64, trailer bool, err error) {
	if declaredEnd >= 0 {
		return 0, false, nil // the next segment's header says where this one ends
	}
	st, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("wal: %s: %w", path, err)
	}
	rest := st.Size() - off
	if rest > recyclableHeaderSize {
		return rest, false, nil
	}
	return 0, rest == recyclableHeaderSize, nil
}

// classify decides what a bad record at off is. In a segment that a later
// one follows, it is damage: the later segment's header vouches for every
// byte up to declaredEnd. In the last segment it is a torn, never
// acknowledged tail, unless an intact later batch or end record of this log
// follows it in the file: batches are written in order and each is synced
// before the next is written, and the end record after the last, so a later
// one proves this one was acknowledged.
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
			"%s, and an intact later record of this log starts at offset %d", reason, later)}
	}
	torn := &TornTail{File: path, Offset: off, Bytes: size - off, Reason: reason}
	data := make([]byte, size-off)
	if _, err := f.ReadAt(data, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("wal: reading %s: %w", path, err)
	}
	torn.Batch, torn.Sections = r.ch.torn(rawRecord(data, off%blockSize, seg))
	return torn, nil
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

func notABatch(f vfs.File, path string, from int64) *NoBatchError {
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
	if _, ok := c.ended(p); ok {
		return true
	}
	logID, _, err := decodeBatchV3(p, &c.scratch)
	return err == nil && logID == c.logID && c.scratch.Number > c.last
}

func (c *chainV3) torn(p []byte) (uint64, []TornSection) {
	d := decoder{p: p}
	if d.byte() != kindBatchV3 || d.u64() != c.logID {
		return 0, nil
	}
	number, prevSum, sections := d.uvarint(), d.u32(), d.uvarint()
	if d.err != nil || number != c.last+1 || prevSum != c.lastSum {
		return 0, nil
	}
	return number, tornSections(&d, sections, func(shard int) uint64 { return c.next[shard] })
}

func (c *chainV3) ended(p []byte) (endRecord, bool) {
	e, err := decodeEndRecord(p)
	return e, err == nil && e.logID == c.logID
}

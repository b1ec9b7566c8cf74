package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/fusee-dev/fusee/meta"
)

// The payload of every pebble record in a segment starts with a kind byte.
// The first record of a segment is its header; every later one is a batch of
// the segment's format. The layouts are specified in doc.go and
// docs/format-wal.md; this file is the only code that knows them.
const (
	kindHeader  byte = 0x01
	kindBatchV2 byte = 0x02
	kindBatchV3 byte = 0x03
	// kindEnd ends a format 3 segment once the next one exists: written
	// after its last batch, before pebble's end-of-log trailer, past the
	// end the next header declares (so a reader that stops there, as every
	// older fusee does, never sees it).
	kindEnd byte = 0x04
)

// Log formats, as recorded in fusee.meta's log= line and in every segment
// header.
const (
	FormatPerShard = 2 // one log per shard, shards/NNNN/log
	FormatShared   = 3 // one log shared by every shard, wal/
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchSum is the checksum that chains a batch to the next one: CRC-32C of
// the batch record's whole payload.
func batchSum(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

// Batch is one record of a log: entries for one or more shards, appended and
// synced together.
type Batch struct {
	// Number counts batches across the whole shared log, from 1. Format 2
	// batches are not numbered: 0.
	Number uint64
	// Pos is where the batch starts; reading from Pos yields this batch
	// first.
	Pos Position
	// Sections holds one section per shard present, in ascending shard
	// order.
	Sections []Section
}

// Section is one shard's part of a batch: entries with consecutive LSNs
// starting at FirstLSN.
type Section struct {
	Shard    int
	FirstLSN uint64
	Entries  [][]byte
}

// shardLSN is a shard's next LSN, as a segment header records it.
type shardLSN struct {
	shard int
	next  uint64
}

// segmentHeader is the first record of every segment file. It names the
// segment and the one before it, says where that one's batches end, and
// carries the chain's state at the segment's start, so a reader starting here
// (because earlier segments were removed) can check the first batch and knows
// every shard's next LSN.
type segmentHeader struct {
	format      uint64
	logID       uint64 // format 3
	shard       int    // format 2
	segment     uint64
	prevSegment uint64 // 0: the log's first segment
	prevEnd     int64  // where prevSegment's batches end
	lastBatch   uint64 // format 3: number of the last batch before this segment
	lastSum     uint32 // format 3: its checksum
	// next lists the shards whose next LSN is above 1, ascending. Format 2
	// has exactly one entry, for its shard.
	next []shardLSN
}

func appendHeader(dst []byte, h *segmentHeader) []byte {
	dst = append(dst, kindHeader)
	dst = binary.AppendUvarint(dst, h.format)
	switch h.format {
	case FormatShared:
		dst = binary.LittleEndian.AppendUint64(dst, h.logID)
		dst = binary.AppendUvarint(dst, h.segment)
		dst = binary.AppendUvarint(dst, h.prevSegment)
		dst = binary.AppendUvarint(dst, uint64(h.prevEnd))
		dst = binary.AppendUvarint(dst, h.lastBatch)
		dst = binary.LittleEndian.AppendUint32(dst, h.lastSum)
		dst = binary.AppendUvarint(dst, uint64(len(h.next)))
		for _, s := range h.next {
			dst = binary.AppendUvarint(dst, uint64(s.shard))
			dst = binary.AppendUvarint(dst, s.next)
		}
	case FormatPerShard:
		dst = binary.AppendUvarint(dst, uint64(h.shard))
		dst = binary.AppendUvarint(dst, h.segment)
		dst = binary.AppendUvarint(dst, h.prevSegment)
		dst = binary.AppendUvarint(dst, uint64(h.prevEnd))
		dst = binary.AppendUvarint(dst, h.next[0].next)
	default:
		panic(fmt.Sprintf("wal: unknown log format %d", h.format))
	}
	return dst
}

func decodeHeader(p []byte) (segmentHeader, error) {
	d := decoder{p: p}
	var h segmentHeader
	if k := d.byte(); d.err == nil && k != kindHeader {
		return h, fmt.Errorf("the segment's first record is not a segment header (kind %#x)", k)
	}
	h.format = d.uvarint()
	switch h.format {
	case FormatShared:
		h.logID = d.u64()
		h.segment = d.uvarint()
		h.prevSegment = d.uvarint()
		h.prevEnd = d.offset()
		h.lastBatch = d.uvarint()
		h.lastSum = d.u32()
		n := d.count(2)
		prev := -1
		for range n {
			s := shardLSN{shard: d.shard(), next: d.uvarint()}
			if d.err == nil && (s.shard <= prev || s.next < 2) {
				d.fail("shard LSNs out of order or below 2")
			}
			prev = s.shard
			h.next = append(h.next, s)
		}
		if d.err == nil && h.lastBatch == 0 && h.lastSum != 0 {
			d.fail("a checksum for batch 0")
		}
	case FormatPerShard:
		h.shard = d.shard()
		h.segment = d.uvarint()
		h.prevSegment = d.uvarint()
		h.prevEnd = d.offset()
		h.next = []shardLSN{{shard: h.shard, next: d.uvarint()}}
		if d.err == nil && h.next[0].next == 0 {
			d.fail("next LSN 0")
		}
	default:
		if d.err == nil {
			return h, fmt.Errorf("segment header of unknown log format %d", h.format)
		}
	}
	if err := d.finish(); err != nil {
		return h, fmt.Errorf("malformed segment header: %w", err)
	}
	return h, nil
}

// endRecord is the record that ends a format 3 segment a writer finished:
// it names the segment, the chain's state at its end (the last batch and
// its checksum) and the segment that follows. closed says the writer was
// closed: the next segment is the log's close segment, which holds only its
// header and ends the log.
type endRecord struct {
	logID     uint64
	segment   uint64
	lastBatch uint64
	lastSum   uint32
	next      uint64
	closed    bool
}

func appendEndRecord(dst []byte, e *endRecord) []byte {
	dst = append(dst, kindEnd)
	dst = binary.LittleEndian.AppendUint64(dst, e.logID)
	dst = binary.AppendUvarint(dst, e.segment)
	dst = binary.AppendUvarint(dst, e.lastBatch)
	dst = binary.LittleEndian.AppendUint32(dst, e.lastSum)
	dst = binary.AppendUvarint(dst, e.next)
	closed := byte(0)
	if e.closed {
		closed = 1
	}
	return append(dst, closed)
}

func decodeEndRecord(p []byte) (endRecord, error) {
	d := decoder{p: p}
	var e endRecord
	if k := d.byte(); d.err == nil && k != kindEnd {
		return e, fmt.Errorf("record of kind %#x where an end record belongs", k)
	}
	e.logID = d.u64()
	e.segment = d.uvarint()
	e.lastBatch = d.uvarint()
	e.lastSum = d.u32()
	e.next = d.uvarint()
	switch c := d.byte(); {
	case d.err != nil:
	case c > 1:
		d.fail("a closed flag other than 0 or 1")
	default:
		e.closed = c == 1
	}
	if d.err == nil && (e.next != e.segment+1 || e.logID == 0) {
		d.fail("an end record naming a next segment that does not follow it, or log id 0")
	}
	if err := d.finish(); err != nil {
		return e, fmt.Errorf("malformed end record: %w", err)
	}
	return e, nil
}

// appendBatchV3Prefix starts a format 3 batch record; the caller appends
// the sections.
func appendBatchV3Prefix(dst []byte, logID, number uint64, prevSum uint32, sections int) []byte {
	dst = append(dst, kindBatchV3)
	dst = binary.LittleEndian.AppendUint64(dst, logID)
	dst = binary.AppendUvarint(dst, number)
	dst = binary.LittleEndian.AppendUint32(dst, prevSum)
	return binary.AppendUvarint(dst, uint64(sections))
}

// appendSectionPrefix starts a section; the caller appends its entries with
// appendEntry.
func appendSectionPrefix(dst []byte, shard int, firstLSN uint64, entries int) []byte {
	dst = binary.AppendUvarint(dst, uint64(shard))
	dst = binary.AppendUvarint(dst, firstLSN)
	return binary.AppendUvarint(dst, uint64(entries))
}

func appendEntry(dst, entry []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(entry)))
	return append(dst, entry...)
}

// decodeBatchV3 decodes a format 3 batch record into b, reusing b's slices;
// b's entries alias p.
func decodeBatchV3(p []byte, b *Batch) (logID uint64, prevSum uint32, err error) {
	d := decoder{p: p}
	if k := d.byte(); d.err == nil && k != kindBatchV3 {
		return 0, 0, fmt.Errorf("record of kind %#x where a batch belongs", k)
	}
	logID = d.u64()
	b.Number = d.uvarint()
	prevSum = d.u32()
	n := d.count(3)
	if d.err == nil && n == 0 {
		d.fail("a batch without sections")
	}
	b.Sections = resize(b.Sections, n)
	prev := -1
	for i := range b.Sections {
		s := &b.Sections[i]
		s.Shard = d.shard()
		if d.err == nil && s.Shard <= prev {
			d.fail("sections out of shard order")
		}
		prev = s.Shard
		s.FirstLSN = d.uvarint()
		s.Entries = d.entries(s.Entries)
		if d.err == nil && s.FirstLSN == 0 {
			d.fail("LSN 0")
		}
	}
	if d.err == nil && b.Number == 0 {
		d.fail("batch number 0")
	}
	if err := d.finish(); err != nil {
		return 0, 0, fmt.Errorf("malformed batch: %w", err)
	}
	return logID, prevSum, nil
}

// appendBatchV2Prefix starts a format 2 batch record; the caller appends
// its entries with appendEntry.
func appendBatchV2Prefix(dst []byte, shard int, firstLSN uint64, entries int) []byte {
	dst = append(dst, kindBatchV2)
	return appendSectionPrefix(dst, shard, firstLSN, entries)
}

// decodeBatchV2 decodes a format 2 batch record into b as a batch with one
// section, reusing b's slices; b's entries alias p.
func decodeBatchV2(p []byte, b *Batch) error {
	d := decoder{p: p}
	if k := d.byte(); d.err == nil && k != kindBatchV2 {
		return fmt.Errorf("record of kind %#x where a batch belongs", k)
	}
	b.Number = 0
	b.Sections = resize(b.Sections, 1)
	s := &b.Sections[0]
	s.Shard = d.shard()
	s.FirstLSN = d.uvarint()
	s.Entries = d.entries(s.Entries)
	if d.err == nil && s.FirstLSN == 0 {
		d.fail("LSN 0")
	}
	if err := d.finish(); err != nil {
		return fmt.Errorf("malformed batch: %w", err)
	}
	return nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		s = append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// decoder reads the fields of one record payload; the first error sticks and
// later reads return zero values.
type decoder struct {
	p   []byte
	err error
}

var errTruncated = errors.New("ends in the middle of a field")

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.p) < 1 {
		d.truncated()
		return 0
	}
	b := d.p[0]
	d.p = d.p[1:]
	return b
}

func (d *decoder) truncated() {
	if d.err == nil {
		d.err = errTruncated
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) u32() uint32 {
	if d.err != nil || len(d.p) < 4 {
		d.truncated()
		return 0
	}
	v := binary.LittleEndian.Uint32(d.p)
	d.p = d.p[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.p) < 8 {
		d.truncated()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.p)
	d.p = d.p[8:]
	return v
}

func (d *decoder) shard() int {
	v := d.uvarint()
	if d.err == nil && v >= meta.MaxShards {
		d.fail(fmt.Sprintf("shard %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *decoder) offset() int64 {
	v := d.uvarint()
	if d.err == nil && v > math.MaxInt64 {
		d.fail("offset out of range")
		return 0
	}
	return int64(v)
}

// count reads a count of items that take at least minBytes each, refusing
// counts the rest of the payload cannot hold (so garbage cannot make the
// decoder allocate without bound).
func (d *decoder) count(minBytes int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.p)/minBytes) {
		d.fail("a count larger than the record")
		return 0
	}
	return int(v)
}

// entries reads a count and that many length-prefixed entries, at least one.
func (d *decoder) entries(dst [][]byte) [][]byte {
	n := d.count(1)
	if d.err == nil && n == 0 {
		d.fail("a section without entries")
	}
	dst = dst[:0]
	for range n {
		l := d.uvarint()
		if d.err != nil {
			break
		}
		if l > uint64(len(d.p)) {
			d.truncated()
			break
		}
		dst = append(dst, d.p[:l:l])
		d.p = d.p[l:]
	}
	return dst
}

func (d *decoder) finish() error {
	if d.err == nil && len(d.p) != 0 {
		d.err = fmt.Errorf("%d bytes after the last field", len(d.p))
	}
	return d.err
}

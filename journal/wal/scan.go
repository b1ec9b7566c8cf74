package wal

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/cockroachdb/pebble/v2/record"
)

// Telling a torn tail from damage needs to know whether any intact batch
// follows a bad record. Pebble's reader cannot say: after a bad chunk it
// only looks at later 32 KiB blocks, and only for the sync offsets of a
// chunk format this package does not write. So findLaterRecord looks itself,
// at every byte offset after the bad record, and leaves all checking of
// chunks to pebble:
//
//   - A candidate is an offset where a chunk header could start (not in the
//     last 10 bytes of a block, nor the first 10 after a block start, where
//     no chunk can end) whose type byte says "full" or "first" recyclable
//     chunk, whose log number is this segment's, and whose length fits the
//     block. Pebble stamps the segment number into every chunk header, so
//     stale chunks from other files are no candidates, and this filter,
//     which reads header fields but never computes a checksum, lets through
//     little besides real records.
//   - A candidate is verified by pebble's own reader over a stream in which
//     the bytes of its block before it are replaced by a filler record of
//     exactly that length, written by pebble's legacy record writer (a
//     reader accepts legacy chunks whatever its log number). Block
//     boundaries stay where they are, so records spanning blocks read
//     correctly, and pebble checks every checksum.

const (
	recyclableFullChunk  = 5
	recyclableFirstChunk = 6
)

// findLaterRecord reports the offset of the first intact record of segment
// seg that starts after offset bad and whose payload accept approves.
func findLaterRecord(f io.ReaderAt, size int64, seg uint64, bad int64, accept func([]byte) bool) (int64, bool, error) {
	base := bad + 1
	if base >= size {
		return 0, false, nil
	}
	data := make([]byte, size-base)
	if _, err := f.ReadAt(data, base); err != nil && err != io.EOF {
		return 0, false, err
	}
	tag := uint32(seg)
	var payload bytes.Buffer
	for c := base; c+recyclableHeaderSize <= size; c++ {
		inBlock := c % blockSize
		if (inBlock != 0 && inBlock < recyclableHeaderSize) || blockSize-inBlock < recyclableHeaderSize {
			continue
		}
		h := data[c-base:]
		if t := h[6]; t != recyclableFullChunk && t != recyclableFirstChunk {
			continue
		}
		if binary.LittleEndian.Uint32(h[7:11]) != tag {
			continue
		}
		if length := int64(binary.LittleEndian.Uint16(h[4:6])); inBlock+recyclableHeaderSize+length > blockSize {
			continue
		}
		if !readRecordAt(data[c-base:], inBlock, seg, &payload) {
			continue
		}
		if accept(payload.Bytes()) {
			return c, true, nil
		}
	}
	return 0, false, nil
}

// readRecordAt has pebble read the record that starts at rest[0], which lies
// inBlock bytes into its block, into payload. It reports whether the record
// is intact.
func readRecordAt(rest []byte, inBlock int64, seg uint64, payload *bytes.Buffer) bool {
	var stream io.Reader = bytes.NewReader(rest)
	if inBlock > 0 {
		stream = io.MultiReader(bytes.NewReader(fillerRecord(int(inBlock))), stream)
	}
	rr := newRecordReader(record.NewReader, stream, seg)
	if inBlock > 0 {
		rec, err := rr.Next()
		if err != nil {
			return false
		}
		if _, err := io.Copy(io.Discard, rec); err != nil {
			return false
		}
	}
	rec, err := rr.Next()
	if err != nil {
		return false
	}
	payload.Reset()
	_, err = payload.ReadFrom(rec)
	return err == nil
}

// fillerRecord is a legacy-format record of exactly n bytes, header
// included (n must be at least a legacy header's 7 bytes and at most a
// block).
func fillerRecord(n int) []byte {
	const legacyHeaderSize = 7
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	if _, err := w.WriteRecord(make([]byte, n-legacyHeaderSize)); err != nil {
		panic(err) // writing to memory
	}
	if buf.Len() != n {
		panic("wal: pebble's legacy record framing changed")
	}
	return buf.Bytes()
}

const (
	recyclableMiddleChunk = 7
	recyclableLastChunk   = 8
)

// rawRecord collects the payload bytes of the record whose first chunk
// starts at data[0], inBlock bytes into its block, without checking any
// checksum: chunk after chunk while their headers are stamped with seg and
// their types continue the record, cut short where data ends. It is for
// describing a dropped record, never for accepting one.
func rawRecord(data []byte, inBlock int64, seg uint64) []byte {
	var p []byte
	first := true
	for c := int64(0); c+recyclableHeaderSize <= int64(len(data)); {
		h := data[c:]
		t := h[6]
		if binary.LittleEndian.Uint32(h[7:11]) != uint32(seg) {
			break
		}
		if first != (t == recyclableFullChunk || t == recyclableFirstChunk) || t < recyclableFullChunk || t > recyclableLastChunk {
			break
		}
		first = false
		n := int64(binary.LittleEndian.Uint16(h[4:6]))
		body := h[recyclableHeaderSize:min(recyclableHeaderSize+n, int64(len(h)))]
		p = append(p, body...)
		if t == recyclableFullChunk || t == recyclableLastChunk {
			break
		}
		c += recyclableHeaderSize + n
		if rem := blockSize - (inBlock+c)%blockSize; rem < recyclableHeaderSize {
			c += rem
		}
	}
	return p
}

// tornSections reads, from the readable prefix p of a dropped batch's
// payload, the sections it claims for as long as they continue the chain:
// each shard in ascending order, starting at next(shard), with at least one
// entry. Reading stops at the first field that does not decode.
func tornSections(d *decoder, sections uint64, next func(shard int) uint64) []TornSection {
	var out []TornSection
	prev := -1
	for range sections {
		shard := d.shard()
		first := d.uvarint()
		n := d.uvarint()
		if d.err != nil || shard <= prev || first != next(shard) || n == 0 {
			break
		}
		prev = shard
		out = append(out, TornSection{Shard: shard, FirstLSN: first, Entries: n})
		for range n {
			l := d.uvarint()
			if d.err != nil || l > uint64(len(d.p)) {
				return out
			}
			d.p = d.p[l:]
		}
	}
	return out
}

package wal

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fuzzLog is a small shared log written once per test binary: three
// segments, batches over several shards; in segment 2 a run of batches of
// about 1.6 KB, one of which spans pebble's first 32 KiB block boundary
// (batches are kept small because pebble's reader, on a bad checksum,
// tries every single-bit flip of the chunk: a 32 KiB chunk costs a third
// of a second per read, and would starve the fuzzer). It comes in two
// states: closed (every segment ends with an end record and pebble's
// trailer, and a close segment follows the third) and crashed right after
// the last append (the last segment has neither).
type fuzzLog struct {
	fs      vfs.FS
	dir     string
	batches []batchCopy
	files   [][]byte // the segments' bytes, segment 1 first
	span    int      // the batch that spans a block boundary
}

func makeFuzzLogs(tb testing.TB) [2]*fuzzLog {
	tb.Helper()
	var logs [2]*fuzzLog
	for i, crash := range []bool{false, true} {
		mem := vfs.NewCrashableMem()
		l := newTestLog(tb, mem, Options{})
		for k := range 3 {
			l.append(tb, uint64(k), []int{1, 2, 5}, []int{30, 1, 60, 7})
		}
		if err := l.w.Rotate(); err != nil {
			tb.Fatal(err)
		}
		for k := range 23 {
			l.append(tb, uint64(10+k), []int{2, 7}, []int{1500, 100})
		}
		if err := l.w.Rotate(); err != nil {
			tb.Fatal(err)
		}
		l.append(tb, 40, []int{1, 2, 5}, []int{30, 1, 60, 7})
		l.append(tb, 41, []int{1023, 0}, []int{0, 3, 17})
		var fs vfs.FS = mem
		if crash {
			fs = mem.CrashClone(vfs.CrashCloneCfg{})
		}
		l.close(tb)
		fl := &fuzzLog{fs: fs, dir: l.dir, batches: l.batches, span: -1}
		// Closed, the log has a fourth segment: the close segment.
		for seg := uint64(1); seg <= 3 || (!crash && seg == 4); seg++ {
			fl.files = append(fl.files, fileBytes(tb, fs, segPath(fs, l.dir, seg)))
		}
		for k := 1; k < len(l.batches); k++ {
			if p, q := l.batches[k-1].Pos, l.batches[k].Pos; p.Segment == 2 && q.Segment == 2 && p.Offset < 32<<10 && q.Offset > 32<<10 {
				fl.span = k - 1
			}
		}
		if fl.span < 0 {
			tb.Fatal("no batch spans a block boundary")
		}
		// The log reads back whole before any damage.
		got, tail, err := collect(fs, l.dir, Position{})
		if err != nil || tail.Torn != nil {
			tb.Fatalf("the undamaged log (crashed %v): torn %v, %v", crash, tail.Torn, err)
		}
		if d := diffBatches(got, l.batches); d != "" {
			tb.Fatalf("the undamaged log (crashed %v): %s", crash, d)
		}
		logs[i] = fl
	}
	return logs
}

// FuzzReadDamaged damages one segment of a small valid log (patch
// overwrites bytes at offset, growing the file if it runs past the end;
// then cut bytes are cut off the end) and reads the log, from the start or
// from a batch's position. Whatever the damage, Read must not panic, and
// every batch it hands fn must be one that was written, in order, from the
// start position on: a prefix of the batches appended, with identical
// positions, shards, LSNs and entries. It either succeeds (dropping a torn
// tail or not; the tail's last batch is then the last batch it read) or
// fails with a *CorruptError; only a read that starts at a position may
// also fail because no batch starts there any more. Bytes added after a
// segment's end, and nothing else, never cost a batch: the read succeeds
// with every batch (a torn tail dropped at most).
//
//	go test -run XXX -fuzz '^FuzzReadDamaged$' -fuzztime 60s ./journal/wal/
func FuzzReadDamaged(f *testing.F) {
	logs := makeFuzzLogs(f)
	add := func(crashed bool, seg uint8, offset uint32, patch []byte, cut uint32, from uint8) {
		f.Add(crashed, seg, offset, patch, cut, from)
	}
	for li, crashed := range []bool{false, true} {
		b, files := logs[li].batches, logs[li].files
		n := len(b)
		at := func(k int, delta int64) uint32 { return uint32(b[k].Pos.Offset + delta) }
		span := logs[li].span
		add(crashed, 0, 0, nil, 0, 0)                                                   // intact
		add(crashed, 0, 0, nil, 0, 3)                                                   // intact, from batch 3
		add(crashed, 0, at(1, 30), []byte{0x04}, 0, 0)                                  // a payload byte of batch 2
		add(crashed, 0, at(1, 0), []byte{0xff}, 0, 0)                                   // its chunk's checksum
		add(crashed, 0, at(1, 4), []byte{0x00, 0x00}, 0, 0)                             // its chunk's length
		add(crashed, 0, at(1, 6), []byte{0x01}, 0, 0)                                   // its chunk's type
		add(crashed, 0, at(1, 7), []byte{0x02}, 0, 0)                                   // its chunk's log number
		add(crashed, 0, 0, nil, uint32(len(files[0])-int(b[2].Pos.Offset)), 0)          // segment 1 cut at batch 3
		add(crashed, 0, uint32(len(files[0])), []byte("stale bytes"), 0, 0)             // bytes after a declared end
		add(crashed, 1, 12, []byte{0x09}, 0, 0)                                         // segment 2's header
		add(crashed, 1, at(10, 500), []byte{0x09}, 0, 0)                                // a batch in segment 2
		add(crashed, 1, 32<<10+3, []byte{0x01}, 0, uint8(span+1))                       // the batch spanning blocks
		add(crashed, 1, 32<<10-2, []byte{0x01}, 0, 0)                                   // the end of the first block
		add(crashed, 2, 0, nil, 5, 0)                                                   // the last segment cut short
		add(crashed, 2, uint32(len(files[2])), []byte("garbage, no record"), 0, 0)      // garbage after the end
		add(crashed, 2, at(n-2, 20), []byte{0x55}, 0, uint8(n-2))                       // the last but one batch
		add(crashed, 2, 0, nil, uint32(len(files[2])), 0)                               // the last segment emptied
		add(crashed, 2, 0, nil, uint32(len(files[2])-int(b[n-1].Pos.Offset)), uint8(n)) // from a batch cut off
		if !crashed {
			add(crashed, 3, uint32(len(files[3])), []byte("x"), 0, 0)     // a byte after the close segment
			add(crashed, 3, 0, nil, 1, 0)                                 // the close segment's trailer cut
			add(crashed, 2, uint32(len(files[2])-12), []byte{0x40}, 0, 0) // segment 3's end record
		}
	}
	f.Fuzz(func(t *testing.T, crashed bool, seg uint8, offset uint32, patch []byte, cut uint32, from uint8) {
		l := logs[0]
		if crashed {
			l = logs[1]
		}
		i := int(seg) % len(l.files)
		data := damage(l.files[i], offset, patch, cut)
		fs := copyFS(t, l.fs, l.dir)
		path := segPath(fs, l.dir, uint64(i+1))
		putFile(t, fs, path, data)

		k := int(from) % (len(l.batches) + 1) // batches before the start
		start := Position{}
		if k > 0 {
			k--
			start = l.batches[k].Pos
		}
		want := l.batches[k:]
		got, tail, err := collect(fs, l.dir, start)
		if len(got) > len(want) {
			t.Fatalf("read %d batches from batch %d, but only %d were written after it", len(got), k+1, len(want))
		}
		if d := diffBatches(got, want[:len(got)]); d != "" {
			t.Fatalf("read a batch that was not written (from batch %d, err %v): %s", k+1, err, d)
		}
		appended := len(data) >= len(l.files[i]) && bytes.Equal(data[:len(l.files[i])], l.files[i])
		trailerCut := len(data) == len(l.files[i])-recyclableHeaderSize && bytes.Equal(data, l.files[i][:len(data)])
		if closeSeg := !crashed && i == 3; closeSeg && len(data) != len(l.files[i]) && !trailerCut {
			// After a clean close, anything added to or cut from the
			// close segment (but its trailer, which carries nothing) is
			// damage, named there.
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("the close segment changed from %d to %d bytes: %v", len(l.files[i]), len(data), err)
			}
			return
		}
		if err != nil && appended {
			t.Fatalf("Read failed though only bytes after a segment's end were added: %v", err)
		}
		if err != nil {
			var ce *CorruptError
			switch {
			case errors.As(err, &ce):
				if ce.File == "" || ce.Offset < 0 || ce.Reason == "" {
					t.Fatalf("a CorruptError that names no place: %#v", ce)
				}
			case k > 0 && strings.Contains(err.Error(), fmt.Sprintf("no batch starts at offset %d of", start.Offset)):
			default:
				t.Fatalf("Read failed with %T, not a *CorruptError: %v", err, err)
			}
			return
		}
		if wantLast := uint64(k + len(got)); tail.LastBatch != wantLast || tail.LogID != 0x1111 {
			t.Fatalf("read %d batches from batch %d, but the tail says log %x, last batch %d", len(got), k+1, tail.LogID, tail.LastBatch)
		}
		if appended && len(got) < len(want) {
			t.Fatalf("Read stopped after %d of %d batches (torn %v), though only bytes after a segment's end were added", len(got), len(want), tail.Torn)
		}
	})
}

// damage returns a copy of data with patch written at offset (at most at
// the end, growing the file) and then cut bytes cut off the end.
func damage(data []byte, offset uint32, patch []byte, cut uint32) []byte {
	out := bytes.Clone(data)
	off := int(offset) % (len(out) + 1)
	if end := off + len(patch); end > len(out) {
		out = append(out, make([]byte, end-len(out))...)
	}
	copy(out[off:], patch)
	return out[:len(out)-int(cut)%(len(out)+1)]
}

package wal

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// crashedLog writes batches with a sync-mode writer and returns the
// filesystem as a crash right after the last Append would leave it: every
// batch present, no end-of-log trailer.
func crashedLog(t *testing.T, opts Options, write func(l *testLog)) (*vfs.MemFS, *testLog) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	l := newTestLog(t, fs, opts)
	write(l)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	l.close(t)
	l.fs = crashed
	return crashed, l
}

// batchEnd is where batch k (0-based) ends in its segment file.
func batchEnd(t *testing.T, l *testLog, k int) int64 {
	if k+1 < len(l.batches) && l.batches[k+1].Pos.Segment == l.batches[k].Pos.Segment {
		return l.batches[k+1].Pos.Offset
	}
	tail, err := Read(l.fs, l.dir, l.batches[k].Pos, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tail.End.Segment == l.batches[k].Pos.Segment {
		return tail.End.Offset
	}
	// The next segment's header says where this one ends.
	next := l.batches[k].Pos.Segment + 1
	h, err := readSegmentHeader(l.fs, segPath(l.fs, l.dir, next), next)
	if err != nil {
		t.Fatal(err)
	}
	return h.prevEnd
}

func TestTornTailAtEveryOffset(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int // of the last batch's entry
		step int64
	}{
		{"small", 300, 1},
		{"spanning blocks", 70 << 10, 89},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashed, l := crashedLog(t, Options{}, func(l *testLog) {
				for i := range 5 {
					l.append(t, uint64(i), []int{1, 2}, []int{50, 120})
				}
				l.append(t, 9, []int{2}, []int{tc.size})
			})
			path := segPath(crashed, l.dir, 1)
			data := fileBytes(t, crashed, path)
			last := l.batches[5].Pos.Offset
			cuts := []int64{last, last + 1, int64(len(data)) - 1, int64(len(data))}
			for cut := last; cut < int64(len(data)); cut += tc.step {
				cuts = append(cuts, cut)
			}
			for _, cut := range cuts {
				fs := copyFS(t, crashed, l.dir)
				putFile(t, fs, path, data[:cut])
				got, tail, err := collect(fs, l.dir, Position{})
				if err != nil {
					t.Fatalf("cut at %d: %v", cut, err)
				}
				want := l.batches[:5]
				if cut == int64(len(data)) {
					want = l.batches
				}
				if d := diffBatches(got, want); d != "" {
					t.Fatalf("cut at %d: %s", cut, d)
				}
				switch {
				case cut == last || cut == int64(len(data)):
					if tail.Torn != nil {
						t.Fatalf("cut at %d: reported torn %v", cut, tail.Torn)
					}
				case tail.Torn == nil:
					t.Fatalf("cut at %d: torn tail not reported", cut)
				case tail.Torn.File != path || tail.Torn.Offset != last || tail.Torn.Bytes != cut-last:
					t.Fatalf("cut at %d: torn %v, want %s from %d, %d bytes", cut, tail.Torn, path, last, cut-last)
				}
				if cut < int64(len(data)) && tail.End != (Position{1, last}) {
					t.Fatalf("cut at %d: end %v", cut, tail.End)
				}
			}
		})
	}
}

// TestOpenAppendAfterTornTail continues a log whose tail was dropped: the
// dropped bytes stay in the old segment, and the new segment's header keeps
// them out of every later read.
func TestOpenAppendAfterTornTail(t *testing.T) {
	crashed, l := crashedLog(t, Options{}, func(l *testLog) {
		for i := range 4 {
			l.append(t, uint64(i), []int{5}, []int{200})
		}
	})
	path := segPath(crashed, l.dir, 1)
	data := fileBytes(t, crashed, path)
	putFile(t, crashed, path, data[:l.batches[3].Pos.Offset+20])

	_, tail, err := collect(crashed, l.dir, Position{})
	if err != nil || tail.Torn == nil {
		t.Fatalf("torn %v, err %v", tail.Torn, err)
	}
	stale := tail
	stale.Torn = nil
	if _, err := OpenAppend(crashed, l.dir, stale, Options{}); err == nil || !strings.Contains(err.Error(), "the log changed since it was read") {
		t.Fatalf("OpenAppend with a tail that does not match the file: %v", err)
	}
	w, err := OpenAppend(crashed, l.dir, tail, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.w, l.batches = w, l.batches[:3]
	l.append(t, 10, []int{5, 6}, []int{7, 8})
	l.append(t, 11, []int{6}, []int{9})
	if l.batches[3].Number != 4 || l.batches[3].Sections[0].FirstLSN != 4 {
		t.Fatalf("continued with %+v", l.batches[3])
	}
	l.close(t)

	got, tail, err := collect(crashed, l.dir, Position{})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffBatches(got, l.batches); d != "" {
		t.Fatal(d)
	}
	if tail.Torn != nil {
		t.Fatalf("the dropped tail was reported again: %v", tail.Torn)
	}
}

// TestFlippedByte flips one bit, then every bit of a byte, at several places
// in every batch of a two-segment log. Damage is an error naming the file
// and the batch's offset everywhere except in the very last batch, where it
// looks like a torn write.
func TestFlippedByte(t *testing.T) {
	crashed, l := crashedLog(t, Options{}, func(l *testLog) {
		for i := range 8 {
			if i == 4 {
				if err := l.w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			sizes := []int{40, 300}
			if i == 2 || i == 6 {
				sizes = []int{40, 40 << 10} // spans blocks
			}
			l.append(t, uint64(i), []int{i % 3, 4}, sizes)
		}
	})
	for k, b := range l.batches {
		path := segPath(crashed, l.dir, b.Pos.Segment)
		data := fileBytes(t, crashed, path)
		start, end := b.Pos.Offset, batchEnd(t, l, k)
		// chunk checksum, length, type, log number, kind, log id, batch
		// number, the middle, the last byte
		at := []int64{0, 4, 6, 7, 11, 12, 20, (end - start) / 2, end - start - 1}
		masks := []byte{0x01, 0xff}
		if end-start > blockSize {
			// Pebble diagnoses a bad chunk by trying every bit flip, which
			// costs a quarter second in a 32 KiB chunk: sample less.
			at, masks = []int64{0, 20, end - start - 1}, masks[:1]
		}
		for _, at := range at {
			for _, mask := range masks {
				fs := copyFS(t, crashed, l.dir)
				bad := append([]byte(nil), data...)
				bad[start+at] ^= mask
				putFile(t, fs, path, bad)
				got, tail, err := collect(fs, l.dir, Position{})
				if k == len(l.batches)-1 {
					if err != nil {
						t.Fatalf("batch %d, byte %d ^ %#x: %v", k+1, at, mask, err)
					}
					if tail.Torn == nil || tail.Torn.Offset != start || tail.Torn.File != path {
						t.Fatalf("batch %d, byte %d ^ %#x: torn %v", k+1, at, mask, tail.Torn)
					}
					if d := diffBatches(got, l.batches[:k]); d != "" {
						t.Fatalf("batch %d, byte %d ^ %#x: %s", k+1, at, mask, d)
					}
					continue
				}
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("batch %d, byte %d ^ %#x: got err %v, %d batches, torn %v; want a CorruptError",
						k+1, at, mask, err, len(got), tail.Torn)
				}
				if ce.File != path || ce.Offset != start {
					t.Fatalf("batch %d, byte %d ^ %#x: %v; want %s at offset %d", k+1, at, mask, err, path, start)
				}
				if !strings.Contains(err.Error(), "restore the data directory from a backup") {
					t.Fatalf("error says nothing about what to do: %v", err)
				}
			}
		}
	}
}

// TestStaleRecordIsNotJoined appends to a crashed log's last segment the
// bytes of a valid record of another log: it must read as a torn tail,
// never as a batch.
func TestStaleRecordIsNotJoined(t *testing.T) {
	write := func(l *testLog) {
		for i := range 3 {
			l.append(t, uint64(i), []int{1}, []int{100})
		}
	}
	// other returns the bytes of batches [from, to) (0-based) of a log
	// written with opts, with batch 2 (0-based) of content seed3.
	other := func(opts Options, rotations int, seed3 uint64, from, to int) []byte {
		fs, ol := crashedLog(t, opts, func(l *testLog) {
			for range rotations {
				if err := l.w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 6 {
				seed := uint64(i)
				if i == 2 {
					seed = seed3
				}
				l.append(t, seed, []int{1}, []int{100})
			}
		})
		data := fileBytes(t, fs, segPath(fs, ol.dir, ol.batches[0].Pos.Segment))
		return data[ol.batches[from].Pos.Offset:batchEnd(t, ol, to-1)]
	}
	for _, tc := range []struct {
		name   string
		stale  []byte
		reason string
	}{
		{"another segment number", other(Options{LogID: 0x2222}, 2, 2, 3, 4), "damaged or incomplete record"},
		// Pebble takes a chunk stamped with the next segment's number for
		// its end-of-log trailer.
		{"the next segment number", other(Options{LogID: 0x2222}, 1, 2, 3, 4), "end of the log"},
		{"another log, same segment number", other(Options{LogID: 0x2222}, 0, 2, 3, 4), "another log"},
		{"two records of another log", other(Options{LogID: 0x2222}, 0, 2, 3, 5), "another log"},
		{"a fork of this log", other(Options{}, 0, 99, 3, 4), "does not chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, l := crashedLog(t, Options{}, write)
			path := segPath(fs, l.dir, 1)
			data := fileBytes(t, fs, path)
			putFile(t, fs, path, append(data, tc.stale...))
			got, tail, err := collect(fs, l.dir, Position{})
			if err != nil {
				t.Fatal(err)
			}
			if d := diffBatches(got, l.batches); d != "" {
				t.Fatal(d)
			}
			if tail.LastBatch != 3 || tail.Torn == nil || tail.Torn.Offset != int64(len(data)) ||
				tail.Torn.Bytes != int64(len(tc.stale)) || !strings.Contains(tail.Torn.Reason, tc.reason) {
				t.Fatalf("last batch %d, torn %v; want the stale bytes dropped because of %q", tail.LastBatch, tail.Torn, tc.reason)
			}
		})
	}
}

// TestChainBreakInside swaps a batch for one with the same number and
// length from a fork of the log: the swapped batch chains, the one after it
// does not, and since an intact batch follows, that is damage.
func TestChainBreakInside(t *testing.T) {
	write := func(seed3 uint64) func(l *testLog) {
		return func(l *testLog) {
			for i := range 5 {
				seed := uint64(i)
				if i == 2 {
					seed = seed3
				}
				l.append(t, seed, []int{1}, []int{100})
			}
		}
	}
	fs, l := crashedLog(t, Options{}, write(2))
	fork, fl := crashedLog(t, Options{}, write(77))
	path := segPath(fs, l.dir, 1)
	data := fileBytes(t, fs, path)
	forkData := fileBytes(t, fork, path)
	p3, p4 := l.batches[2].Pos.Offset, l.batches[3].Pos.Offset
	if fl.batches[3].Pos.Offset != p4 {
		t.Fatal("the fork's batches are laid out differently")
	}
	copy(data[p3:p4], forkData[p3:p4])
	putFile(t, fs, path, data)

	_, _, err := collect(fs, l.dir, Position{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != p4 || !strings.Contains(ce.Reason, "does not chain") {
		t.Fatalf("got %v; want a chain break at offset %d", err, p4)
	}
}

// TestDamagedSegments covers damage to whole segments: a header, a segment
// cut short before the end the next one declares, a missing segment, and
// bytes past the end of a closed log.
func TestDamagedSegments(t *testing.T) {
	write := func(l *testLog) {
		for i := range 9 {
			if i == 3 || i == 6 {
				if err := l.w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			l.append(t, uint64(i), []int{1, 2}, []int{100, 10})
		}
	}
	fs, l := crashedLog(t, Options{}, write)
	seg1, seg2, seg3 := segPath(fs, l.dir, 1), segPath(fs, l.dir, 2), segPath(fs, l.dir, 3)

	expectCorrupt := func(t *testing.T, fs vfs.FS, file string, offset int64, reason string) {
		t.Helper()
		_, _, err := collect(fs, l.dir, Position{})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != file || ce.Offset != offset || !strings.Contains(ce.Reason, reason) {
			t.Fatalf("got %v; want damage in %s at %d: %q", err, file, offset, reason)
		}
	}
	t.Run("last segment's header", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		data := fileBytes(t, fs, seg3)
		data[15] ^= 1
		putFile(t, fs, seg3, data)
		expectCorrupt(t, fs, seg3, 0, "unreadable segment header")
	})
	t.Run("middle segment cut short", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		data := fileBytes(t, fs, seg2)
		putFile(t, fs, seg2, data[:l.batches[5].Pos.Offset])
		expectCorrupt(t, fs, seg2, l.batches[5].Pos.Offset, "acknowledged batches are missing")
	})
	t.Run("middle segment cut inside a batch", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		data := fileBytes(t, fs, seg2)
		putFile(t, fs, seg2, data[:l.batches[5].Pos.Offset+30])
		expectCorrupt(t, fs, seg2, l.batches[5].Pos.Offset, "damaged or incomplete record")
	})
	t.Run("missing segment", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		if err := fs.Remove(seg2); err != nil {
			t.Fatal(err)
		}
		expectCorrupt(t, fs, seg3, 0, "a segment is missing before it: its header names 0000000000000002.log as the segment before it")
	})
	t.Run("first segment of another log", func(t *testing.T) {
		// Same batch sizes, so the same layout: only the chain tells.
		other, _ := crashedLog(t, Options{LogID: 0x3333}, write)
		fs := copyFS(t, fs, l.dir)
		putFile(t, fs, seg1, fileBytes(t, other, seg1))
		expectCorrupt(t, fs, seg2, 0, "belongs to another log")
	})
	t.Run("bytes after a closed log", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		data := fileBytes(t, fs, seg1)
		putFile(t, fs, seg1, append(data, "stray bytes"...))
		// Segment 1 is followed by segment 2, whose header says where
		// segment 1 ends: the stray bytes are not read.
		if got, _, err := collect(fs, l.dir, Position{}); err != nil || len(got) != 9 {
			t.Fatalf("%d batches, %v", len(got), err)
		}
		// In the last segment, after pebble's end-of-log trailer, they are
		// reported as a dropped tail.
		closed := copyFS(t, fs, l.dir)
		tail, err := Read(closed, l.dir, Position{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := OpenAppend(closed, l.dir, tail, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Closing made segment 5 the close segment: bytes after its
		// trailer are damage, since the log was closed cleanly.
		seg5 := segPath(closed, l.dir, 5)
		good := fileBytes(t, closed, seg5)
		putFile(t, closed, seg5, append(good, "more stray bytes"...))
		_, err = Read(closed, l.dir, Position{}, nil)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != seg5 || ce.Offset != int64(len(good))-recyclableHeaderSize {
			t.Fatalf("stray bytes after a clean close: %v", err)
		}
	})
}

func TestReadFromPosition(t *testing.T) {
	fs := vfs.NewMem()
	l := newTestLog(t, fs, Options{SegmentSize: 400})
	for i := range 12 {
		l.append(t, uint64(i), []int{i % 4}, []int{150})
	}
	l.close(t)
	full, fullTail, err := collect(fs, l.dir, Position{})
	if err != nil || len(full) != 12 {
		t.Fatalf("%d batches, %v", len(full), err)
	}
	start := l.batches[7].Pos
	if start.Segment < 3 {
		t.Fatalf("batch 8 is in segment %d; the test wants it in a later one", start.Segment)
	}

	t.Run("not a batch start", func(t *testing.T) {
		_, _, err := collect(fs, l.dir, Position{start.Segment, start.Offset + 1})
		if err == nil || !strings.Contains(err.Error(), "no batch starts at offset") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no such segment", func(t *testing.T) {
		_, _, err := collect(fs, l.dir, Position{99, 0})
		if err == nil || !strings.Contains(err.Error(), "no such segment") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("after RemoveBefore", func(t *testing.T) {
		fs := copyFS(t, fs, l.dir)
		if err := RemoveBefore(fs, l.dir, start); err != nil {
			t.Fatal(err)
		}
		segs, _ := listSegments(fs, l.dir)
		if segs[0] != start.Segment {
			t.Fatalf("segments left: %v", segs)
		}
		_, _, err := collect(fs, l.dir, l.batches[0].Pos)
		if !errors.Is(err, ErrPositionRemoved) {
			t.Fatalf("reading from a removed segment: %v", err)
		}
		// The first remaining segment's header anchors the chain: reading
		// from there or from the log's start gives the same tail as before.
		for _, from := range []Position{{}, start} {
			got, tail, err := collect(fs, l.dir, from)
			if err != nil {
				t.Fatal(err)
			}
			first := 0
			for first < len(l.batches) && l.batches[first].Pos.Segment < start.Segment {
				first++
			}
			if from == start {
				first = 7
			}
			if d := diffBatches(got, l.batches[first:]); d != "" {
				t.Fatal(d)
			}
			if tail != fullTail {
				t.Fatalf("tail %s, want %s", tailString(tail), tailString(fullTail))
			}
		}
		if err := RemoveBefore(fs, l.dir, Position{Segment: 99}); err == nil {
			t.Fatal("RemoveBefore a missing segment succeeded")
		}
		if segs2, _ := listSegments(fs, l.dir); len(segs2) != len(segs) {
			t.Fatal("RemoveBefore a missing segment removed segments")
		}
	})
}

func TestCreateRefusesAnExistingLog(t *testing.T) {
	fs := vfs.NewMem()
	l := newTestLog(t, fs, Options{})
	l.close(t)
	if _, err := Create(fs, l.dir, Options{}); err == nil || !strings.Contains(err.Error(), "already holds a log") {
		t.Fatalf("got %v", err)
	}
}

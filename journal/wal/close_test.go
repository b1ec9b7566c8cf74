package wal

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// closedLog writes a log of two data segments and closes it, so that it
// has three segments: 1, 2 (the last data segment) and 3 (the close
// segment). In segment 2 the last batch but one crosses a 32 KiB block
// boundary, so its record is two chunks. It returns the log and the
// offset in segment 2 where the last two batches start.
func closedLog(t *testing.T) (*vfs.MemFS, *testLog, int64) {
	t.Helper()
	fs := vfs.NewMem()
	l := newTestLog(t, fs, Options{SegmentSize: 1 << 20})
	for i := range 3 {
		l.append(t, uint64(i), []int{0, 3}, []int{50, 70})
	}
	if err := l.w.Rotate(); err != nil {
		t.Fatal(err)
	}
	seed := uint64(10)
	for {
		pos, err := l.w.NextPosition()
		if err != nil {
			t.Fatal(err)
		}
		if pos.Offset > blockSize-700 {
			break
		}
		l.append(t, seed, []int{1, 2, 3}, []int{900})
		seed++
	}
	l.append(t, seed, []int{2, 5}, []int{400, 300}) // crosses the block boundary
	l.append(t, seed+1, []int{0, 5, 9}, []int{20, 1, 33})
	l.close(t)
	last2 := l.batches[len(l.batches)-2].Pos
	if last2.Segment != 2 || last2.Offset+700 < blockSize {
		t.Fatalf("the last batches start at %v, not across a block boundary in segment 2", last2)
	}
	return fs, l, last2.Offset
}

// closeLayout reads the sizes the test depends on: segment 2's declared
// end (segment 3's header) and the files' sizes.
func closeLayout(t *testing.T, fs vfs.FS, dir string) (declaredEnd int64, size2, size3 int64, headerEnd3 int64) {
	t.Helper()
	h, err := readSegmentHeader(fs, segPath(fs, dir, 3), 3)
	if err != nil {
		t.Fatal(err)
	}
	return h.prevEnd, int64(len(fileBytes(t, fs, segPath(fs, dir, 2)))), int64(len(fileBytes(t, fs, segPath(fs, dir, 3)))),
		int64(len(appendHeader(nil, &h))) + recyclableHeaderSize
}

// wantCorrupt checks that err is a *CorruptError naming file at an offset
// no later than at (where the damage was made).
func wantCorrupt(err error, file string, at int64) error {
	var ce *CorruptError
	if !errors.As(err, &ce) {
		return fmt.Errorf("want damage in %s, got %v", file, err)
	}
	if ce.File != file || ce.Offset > at {
		return fmt.Errorf("want damage in %s at or before offset %d, got %v", file, at, err)
	}
	return nil
}

func TestCleanCloseIsProven(t *testing.T) {
	fs, l, _ := closedLog(t)
	got, tail, err := collect(fs, l.dir, Position{})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffBatches(got, l.batches); d != "" {
		t.Fatal(d)
	}
	if tail.Ending != EndClosed || tail.Torn != nil || tail.End.Segment != 3 {
		t.Fatalf("a closed log reads as %v, %s", tail.Ending, tailString(tail))
	}
	// Reading from the close segment's end (where a reopened writer's
	// checkpoint could point) still finds the evidence.
	if _, tail, err := collect(fs, l.dir, tail.End); err != nil || tail.Ending != EndClosed {
		t.Fatalf("from the end: %v, %v", tail.Ending, err)
	}
	// Reopened and closed again: closed. Reopened and stopped (no Close):
	// not.
	reopened := copyFS(t, fs, l.dir)
	w, err := OpenAppend(reopened, l.dir, tail, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append([]Entry{{Shard: 4, Data: []byte("after reopening")}}); err != nil {
		t.Fatal(err)
	}
	stopped := copyFS(t, reopened, l.dir)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, tail, err := collect(reopened, l.dir, Position{}); err != nil || tail.Ending != EndClosed || tail.LastBatch != uint64(len(l.batches)+1) {
		t.Fatalf("reopened and closed: %v, %s, %v", tail.Ending, tailString(tail), err)
	}
	if _, tail, err := collect(stopped, l.dir, Position{}); err != nil || tail.Ending != EndStopped || tail.Torn != nil || tail.LastBatch != uint64(len(l.batches)+1) {
		t.Fatalf("reopened and stopped: %v, %s, %v", tail.Ending, tailString(tail), err)
	}
}

// TestDamageAfterCleanClose flips every byte and cuts the file at every
// offset of the last two batches of a cleanly closed log, and of what ends
// it, and checks that each is reported as damage naming the file and an
// offset at or before the change: after a clean close nothing is a torn
// tail.
func TestDamageAfterCleanClose(t *testing.T) {
	fs, l, from := closedLog(t)
	declaredEnd, size2, size3, headerEnd3 := closeLayout(t, fs, l.dir)
	seg2, seg3 := segPath(fs, l.dir, 2), segPath(fs, l.dir, 3)
	orig2, orig3 := fileBytes(t, fs, seg2), fileBytes(t, fs, seg3)
	read := func() error {
		_, _, err := collect(fs, l.dir, Position{})
		return err
	}
	flips, cuts := 0, 0
	// Segment 2: the last two batches and the end record. Its last 11
	// bytes, pebble's trailer, carry nothing: the intact end record before
	// them is the evidence.
	for off := from; off < size2-recyclableHeaderSize; off++ {
		data := append([]byte(nil), orig2...)
		data[off] ^= 1 << (off % 8)
		putFile(t, fs, seg2, data)
		if off >= declaredEnd+4 && off < declaredEnd+recyclableHeaderSize {
			// The end record's chunk framing (length, type, log number):
			// no longer framed as an end record, it is evidence lost, not
			// a batch lost.
			got, tail, err := collect(fs, l.dir, Position{})
			if err != nil && wantCorrupt(err, seg2, off) != nil || err == nil && (len(got) != len(l.batches) || tail.Ending == EndClosed) {
				t.Fatalf("byte %d of %s flipped, in the end record's framing: %d batches, %v, %v", off, seg2, len(got), tail.Ending, err)
			}
			continue
		}
		if err := wantCorrupt(read(), seg2, off); err != nil {
			t.Fatalf("byte %d of %s flipped (batches end at %d): %v", off, seg2, declaredEnd, err)
		}
		flips++
	}
	for cut := from; cut < declaredEnd; cut++ {
		putFile(t, fs, seg2, orig2[:cut])
		if err := wantCorrupt(read(), seg2, cut); err != nil {
			t.Fatalf("%s cut at %d: %v", seg2, cut, err)
		}
		cuts++
	}
	// Cutting into the end record loses the evidence, not a batch: the
	// cut cannot be told from a writer stopped while closing. Cutting into
	// the trailer after it loses nothing.
	for cut := declaredEnd; cut < size2; cut++ {
		putFile(t, fs, seg2, orig2[:cut])
		got, tail, err := collect(fs, l.dir, Position{})
		if err != nil || len(got) != len(l.batches) || (tail.Ending == EndClosed) != (cut >= size2-recyclableHeaderSize) {
			t.Fatalf("%s cut at %d, in its end record: %d batches, %v, %v", seg2, cut, len(got), tail.Ending, err)
		}
	}
	putFile(t, fs, seg2, orig2)
	// The close segment: every byte, every cut.
	for off := range size3 {
		data := append([]byte(nil), orig3...)
		data[off] ^= 1 << (off % 8)
		putFile(t, fs, seg3, data)
		if err := wantCorrupt(read(), seg3, off); err != nil {
			t.Fatalf("byte %d of %s flipped: %v", off, seg3, err)
		}
		flips++
	}
	for cut := range size3 {
		putFile(t, fs, seg3, orig3[:cut])
		err := read()
		if cut == headerEnd3 {
			if err != nil {
				t.Fatalf("%s without its trailer: %v", seg3, err)
			}
			continue
		}
		if err := wantCorrupt(err, seg3, cut); err != nil {
			t.Fatalf("%s cut at %d: %v", seg3, cut, err)
		}
		cuts++
	}
	putFile(t, fs, seg3, orig3)
	if err := read(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d flipped bytes and %d cuts after a clean close, each reported as damage", flips, cuts)
}

// TestFailedWriterThenReopened: a writer that failed while writing a
// batch closes its segment with pebble's trailer after the partial batch
// (older fusee versions too). Reopened, the partial batch is a torn tail;
// once the engine that reopened it stops, reading must not take those
// bytes, between the batches and a trailer, for a damaged end record.
func TestFailedWriterThenReopened(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l := newTestLog(t, fs, Options{})
	for i := range 4 {
		l.append(t, uint64(i), []int{1, 2}, []int{40, 400})
	}
	img := fs.CrashClone(vfs.CrashCloneCfg{})
	l.close(t)
	seg1 := segPath(img, l.dir, 1)
	good := fileBytes(t, img, seg1)
	// A partial batch: a full chunk claiming more bytes than follow, then
	// the trailer a LogWriter's Close adds.
	partial := []byte{1, 2, 3, 4, 200, 0, recyclableFullChunk, 1, 0, 0, 0, kindBatchV3, 0x11, 0x11, 0, 0, 0, 0, 0, 0, 5}
	trailer := []byte{0, 0, 0, 0, 0, 0, recyclableFullChunk, 2, 0, 0, 0}
	putFile(t, img, seg1, append(append(append([]byte(nil), good...), partial...), trailer...))
	_, tail, err := collect(img, l.dir, Position{})
	if err != nil || tail.Torn == nil || tail.LastBatch != 4 {
		t.Fatalf("the failed writer's log: %s, %v", tailString(tail), err)
	}
	w, err := OpenAppend(img, l.dir, tail, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append([]Entry{{Shard: 3, Data: []byte("after")}}); err != nil {
		t.Fatal(err)
	}
	stopped := copyFS(t, img, l.dir)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, tail, err := collect(stopped, l.dir, Position{}); err != nil || tail.Ending != EndStopped || tail.LastBatch != 5 {
		t.Fatalf("reopened and stopped: %v, %s, %v", tail.Ending, tailString(tail), err)
	}
	if _, tail, err := collect(img, l.dir, Position{}); err != nil || tail.Ending != EndClosed || tail.LastBatch != 5 {
		t.Fatalf("reopened and closed: %v, %s, %v", tail.Ending, tailString(tail), err)
	}
}

func TestDeletedLastSegments(t *testing.T) {
	fs, l, _ := closedLog(t)
	declaredEnd, _, _, _ := closeLayout(t, fs, l.dir)
	if err := fs.Remove(segPath(fs, l.dir, 3)); err != nil {
		t.Fatal(err)
	}
	_, _, err := collect(fs, l.dir, Position{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != segPath(fs, l.dir, 2) || ce.Offset != declaredEnd {
		t.Fatalf("the close segment deleted: %v", err)
	}
	if err := fs.Remove(segPath(fs, l.dir, 2)); err != nil {
		t.Fatal(err)
	}
	_, _, err = collect(fs, l.dir, Position{})
	if !errors.As(err, &ce) || ce.File != segPath(fs, l.dir, 1) {
		t.Fatalf("the last two segments deleted: %v", err)
	}
}

// TestTornTailFigures cuts the last batch of a log whose writer stopped
// (no Close) at every offset, and checks what the read reports: the log
// stopped, the batch dropped from its start to the cut, every batch before
// it kept.
func TestTornTailFigures(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l := newTestLog(t, fs, Options{})
	for i := range 6 {
		l.append(t, uint64(i), []int{i % 3, 7}, []int{30, 200})
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // what a power cut now leaves: every batch was synced
	l.close(t)
	seg := segPath(crashed, l.dir, 1)
	orig := fileBytes(t, crashed, seg)
	lastPos := l.batches[len(l.batches)-1].Pos
	var claimed [3]int
	_, tail, err := collect(crashed, l.dir, Position{})
	if err != nil || tail.Ending != EndStopped || tail.Torn != nil || tail.LastBatch != 6 {
		t.Fatalf("stopped after 6 batches: %v, %s, %v", tail.Ending, tailString(tail), err)
	}
	for cut := lastPos.Offset + 1; cut < int64(len(orig)); cut++ {
		putFile(t, crashed, seg, orig[:cut])
		got, tail, err := collect(crashed, l.dir, Position{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := Position{Segment: 1, Offset: lastPos.Offset}
		if tail.Ending != EndStopped || tail.Torn == nil || tail.End != want || tail.Torn.Offset != lastPos.Offset ||
			tail.Torn.Bytes != cut-lastPos.Offset || tail.LastBatch != 5 || len(got) != 5 {
			t.Fatalf("cut at %d: %v, %s, %d batches", cut, tail.Ending, tailString(tail), len(got))
		}
		// Shard 7 had an entry in every batch: the sixth is dropped.
		if tail.NextLSN[7] != 6 {
			t.Fatalf("cut at %d: shard 7's next LSN %d, want 6", cut, tail.NextLSN[7])
		}
		// What the dropped bytes claim: batch 6, shard 2's LSN 2 and shard
		// 7's LSN 6, as far as the cut kept the batch's fields.
		claims := []TornSection{{Shard: 2, FirstLSN: 2, Entries: 1}, {Shard: 7, FirstLSN: 6, Entries: 1}}
		n := len(tail.Torn.Sections)
		if n > 2 || (n > 0 && !slices.Equal(tail.Torn.Sections, claims[:n])) || (n > 0 && tail.Torn.Batch != 6) || (tail.Torn.Batch != 0 && tail.Torn.Batch != 6) {
			t.Fatalf("cut at %d: batch %d, sections %v", cut, tail.Torn.Batch, tail.Torn.Sections)
		}
		if cut == int64(len(orig))-1 && n != 2 {
			t.Fatalf("one byte short of the whole batch: sections %v", tail.Torn.Sections)
		}
		claimed[n]++
	}
	t.Logf("cuts by how many sections their dropped bytes still name: %v", claimed)
	if claimed[0] == 0 || claimed[1] == 0 || claimed[2] == 0 {
		t.Fatalf("some claims never seen: %v", claimed)
	}
	// A flipped byte in the last batch's payload, nothing after it: the
	// checksum fails, the fields still read.
	data := append([]byte(nil), orig...)
	data[len(data)-1] ^= 0x10
	putFile(t, crashed, seg, data)
	if _, tail, err := collect(crashed, l.dir, Position{}); err != nil || tail.Torn == nil || len(tail.Torn.Sections) != 2 {
		t.Fatalf("the last byte flipped: %s, %v", tailString(tail), err)
	}
}

// TestCloseNearBlockBoundary closes logs whose batches end at every offset
// around the first 32 KiB block boundary, so that the end record is padded
// into the next block or split across two, and checks that each reads as
// closed, and as damaged once its close segment is deleted.
func TestCloseNearBlockBoundary(t *testing.T) {
	seen := map[int64]bool{}
	for n := blockSize - 200; n < blockSize-20; n++ {
		fs := vfs.NewMem()
		l := newTestLog(t, fs, Options{})
		l.append(t, uint64(n), []int{0}, []int{n})
		pos, err := l.w.NextPosition()
		if err != nil {
			t.Fatal(err)
		}
		if d := blockSize - pos.Offset; d < -20 || d > 80 {
			l.close(t)
			continue
		}
		seen[pos.Offset] = true
		l.close(t)
		if _, tail, err := collect(fs, l.dir, Position{}); err != nil || tail.Ending != EndClosed {
			t.Fatalf("batches ending at %d: %v, %v", pos.Offset, tail.Ending, err)
		}
		if err := fs.Remove(segPath(fs, l.dir, 2)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := collect(fs, l.dir, Position{}); wantCorrupt(err, segPath(fs, l.dir, 1), pos.Offset) != nil {
			t.Fatalf("batches ending at %d, close segment deleted: %v", pos.Offset, err)
		}
	}
	if len(seen) < 60 {
		t.Fatalf("only %d end offsets near the boundary tried", len(seen))
	}
}

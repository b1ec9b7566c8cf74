package wal

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Entry is one opaque journal record for a shard. Append sets LSN.
type Entry struct {
	Shard int
	Data  []byte
	LSN   uint64 // assigned by Append
}

// Writer appends batches to a shared (format 3) log. It is not safe for
// concurrent use, and it must be closed: pebble's record writer runs a
// goroutine per open segment.
type Writer struct {
	log     segmentLog
	logID   uint64
	last    uint64 // number of the last batch appended
	lastSum uint32
	next    [meta.MaxShards]uint64
	order   []int // scratch: entry indexes grouped by shard
}

// Create starts a new, empty shared log in dir, creating dir (and syncing its
// parent) if needed. dir must not hold segments already.
func Create(fs vfs.FS, dir string, opts Options) (*Writer, error) {
	if err := prepareNewLog(fs, dir); err != nil {
		return nil, err
	}
	w := &Writer{logID: opts.LogID}
	for w.logID == 0 {
		w.logID = rand.Uint64()
	}
	for i := range w.next {
		w.next[i] = 1
	}
	if err := w.start(fs, dir, opts, 1, 0, 0); err != nil {
		return nil, err
	}
	return w, nil
}

// prepareNewLog makes dir exist durably and checks that it holds no log.
func prepareNewLog(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wal: creating %s: %w", dir, err)
	}
	if err := meta.SyncDir(fs, fs.PathDir(dir)); err != nil {
		return err
	}
	segs, err := listSegments(fs, dir)
	if err != nil {
		return err
	}
	if len(segs) > 0 {
		return fmt.Errorf("wal: %s already holds a log (segment %s)", dir, segmentName(segs[0]))
	}
	return removeTemps(fs, dir)
}

// OpenAppend continues the log in dir after recovery. tail must be what Read
// returned after reading the log to its end. The writer starts a new segment
// whose header records where the previous segment's batches end, so a torn
// tail dropped by that read stays dropped and is never mistaken for damage.
func OpenAppend(fs vfs.FS, dir string, tail Tail, opts Options) (*Writer, error) {
	segs, err := listSegments(fs, dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("wal: %s holds no log to continue", dir)
	}
	last := segs[len(segs)-1]
	if tail.LogID == 0 || tail.End.Segment != last {
		return nil, fmt.Errorf("wal: the tail given ends in %s but the log in %s ends in %s: read the log again",
			segmentName(tail.End.Segment), dir, segmentName(last))
	}
	h, err := readSegmentHeader(fs, fs.PathJoin(dir, segmentName(last)), last)
	if err != nil {
		return nil, err
	}
	if h.format != FormatShared || h.logID != tail.LogID {
		return nil, fmt.Errorf("wal: the tail given is not of the log in %s", dir)
	}
	if err := checkTailIsCurrent(fs, fs.PathJoin(dir, segmentName(last)), tail); err != nil {
		return nil, err
	}
	if err := removeTemps(fs, dir); err != nil {
		return nil, err
	}
	w := &Writer{logID: tail.LogID, last: tail.LastBatch, lastSum: tail.LastSum, next: tail.NextLSN}
	for i, n := range w.next {
		if n == 0 {
			w.next[i] = 1
		}
	}
	if err := w.start(fs, dir, opts, last+1, last, tail.End.Offset); err != nil {
		return nil, err
	}
	return w, nil
}

// checkTailIsCurrent refuses a tail read before the last segment grew: the
// new segment's header would declare an end that hides the batches added
// since. The last segment must end where the read found it ending: at the
// end of its last batch, after pebble's end-of-log trailer, or after the
// torn tail the read dropped.
func checkTailIsCurrent(fs vfs.FS, path string, tail Tail) error {
	st, err := fs.Stat(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	size, end := st.Size(), tail.End.Offset
	ok := size == end || size == end+recyclableHeaderSize
	if tail.Torn != nil {
		ok = tail.Torn.File == path && size == tail.Torn.Offset+tail.Torn.Bytes
	}
	if !ok {
		return fmt.Errorf("wal: %s is %d bytes, but the tail given ends at offset %d: the log changed since it was read; read it again",
			path, size, end)
	}
	return nil
}

func (w *Writer) start(fs vfs.FS, dir string, opts Options, seg, prevSeg uint64, prevEnd int64) error {
	w.log = segmentLog{fs: fs, dir: dir, opts: opts, header: w.header, end: w.endRecord}
	cur, err := createSegment(fs, dir, seg, w.header(seg, prevSeg, prevEnd))
	if err != nil {
		return err
	}
	w.log.cur = cur
	return nil
}

// header is the header of a new segment, carrying the chain's state.
func (w *Writer) header(seg, prevSeg uint64, prevEnd int64) []byte {
	h := segmentHeader{
		format:      FormatShared,
		logID:       w.logID,
		segment:     seg,
		prevSegment: prevSeg,
		prevEnd:     prevEnd,
		lastBatch:   w.last,
		lastSum:     w.lastSum,
	}
	for shard, n := range w.next {
		if n > 1 {
			h.next = append(h.next, shardLSN{shard: shard, next: n})
		}
	}
	return appendHeader(nil, &h)
}

// endRecord is the end record of segment seg, which the writer finished.
func (w *Writer) endRecord(seg uint64, closed bool) []byte {
	return appendEndRecord(nil, &endRecord{logID: w.logID, segment: seg, lastBatch: w.last, lastSum: w.lastSum,
		next: seg + 1, closed: closed})
}

// Append writes entries as one batch and, unless the writer is in NoSync
// mode, returns only once the batch is fsynced. It sets each entry's LSN:
// every shard's entries get the shard's next LSNs in the order given. The
// batch stores entries grouped by shard, in ascending shard order. The
// returned Position is where the batch starts. After an error the writer
// accepts nothing more.
func (w *Writer) Append(entries []Entry) (Position, error) {
	if w.log.err != nil {
		return Position{}, w.log.err
	}
	if len(entries) == 0 {
		return Position{}, fmt.Errorf("wal: append of an empty batch")
	}
	for _, e := range entries {
		if e.Shard < 0 || e.Shard >= meta.MaxShards {
			return Position{}, fmt.Errorf("wal: shard %d out of range 0..%d", e.Shard, meta.MaxShards-1)
		}
	}
	w.order = w.order[:0]
	for i := range entries {
		w.order = append(w.order, i)
	}
	slices.SortStableFunc(w.order, func(a, b int) int { return cmp.Compare(entries[a].Shard, entries[b].Shard) })

	sections := 1
	for i := 1; i < len(w.order); i++ {
		if entries[w.order[i]].Shard != entries[w.order[i-1]].Shard {
			sections++
		}
	}
	buf := appendBatchV3Prefix(w.log.buffer(), w.logID, w.last+1, w.lastSum, sections)
	for i := 0; i < len(w.order); {
		shard := entries[w.order[i]].Shard
		j := i + 1
		for j < len(w.order) && entries[w.order[j]].Shard == shard {
			j++
		}
		buf = appendSectionPrefix(buf, shard, w.next[shard], j-i)
		for _, k := range w.order[i:j] {
			buf = appendEntry(buf, entries[k].Data)
		}
		i = j
	}
	sum := batchSum(buf)
	pos, err := w.log.append(buf)
	if err != nil {
		return Position{}, err
	}
	w.last++
	w.lastSum = sum
	for _, k := range w.order {
		e := &entries[k]
		e.LSN = w.next[e.Shard]
		w.next[e.Shard]++
	}
	return pos, nil
}

// NextLSN is the LSN the shard's next entry will get.
func (w *Writer) NextLSN(shard int) uint64 { return w.next[shard] }

// LastBatch is the number of the last batch appended (0 for none).
func (w *Writer) LastBatch() uint64 { return w.last }

// NextPosition is where the next batch will start, as a position to read
// from: valid even if the writer moves to a new segment first.
func (w *Writer) NextPosition() (Position, error) { return w.log.nextPosition() }

// Rotate closes the current segment and starts the next one.
func (w *Writer) Rotate() error { return w.log.rotate() }

// Sync makes every batch appended so far durable; in NoSync mode it is the
// point where they become acknowledged. Without NoSync it does nothing.
func (w *Writer) Sync() error { return w.log.sync() }

// Close syncs what is buffered and closes the log: it creates the log's
// close segment (a header only, declaring where the batches end), then ends
// the current segment with an end record saying the log was closed, and
// pebble's end-of-log trailer. A reader then tells damage to the last
// batches from a torn write (docs/format-wal.md, "Clean close"). A writer
// that failed closes its segment without that evidence.
func (w *Writer) Close() error { return w.log.close() }

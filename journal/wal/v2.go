package wal

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Log format 2 keeps one log per shard, in shards/NNNN/log. Its segments and
// framing are those of format 3; a batch is one shard's flush: its first LSN
// and entries. Batches are not numbered or checksum-chained: a batch joins
// the log only if it names the shard and the shard's next LSN, which keeps
// stale records of other logs out but is weaker than format 3's chain.

// WriterV2 appends batches to a shard's format 2 log. It exists to build
// format 2 directories for tests and for upgrade fixtures. It is not safe
// for concurrent use, and it must be closed.
type WriterV2 struct {
	log   segmentLog
	shard int
	next  uint64
}

// CreateV2 starts a new, empty format 2 log for shard in dir (normally
// ShardLogDir(fs, datadir, shard)), creating dir if needed.
func CreateV2(fs vfs.FS, dir string, shard int, opts Options) (*WriterV2, error) {
	return CreateV2From(fs, dir, shard, 1, opts)
}

// CreateV2From is CreateV2 for a log whose first entry has LSN next (≥ 1):
// the log of a shard whose store already reflects entries 1 … next-1, as an
// engine leaves it after deleting segments every checkpoint covers.
func CreateV2From(fs vfs.FS, dir string, shard int, next uint64, opts Options) (*WriterV2, error) {
	if next == 0 {
		return nil, fmt.Errorf("wal: a format 2 log cannot start at LSN 0")
	}
	if shard < 0 || shard >= meta.MaxShards {
		return nil, fmt.Errorf("wal: shard %d out of range 0..%d", shard, meta.MaxShards-1)
	}
	if err := prepareNewLog(fs, dir); err != nil {
		return nil, err
	}
	w := &WriterV2{shard: shard, next: next}
	w.log = segmentLog{fs: fs, dir: dir, opts: opts, header: w.header}
	cur, err := createSegment(fs, dir, 1, w.header(1, 0, 0))
	if err != nil {
		return nil, err
	}
	w.log.cur = cur
	return w, nil
}

func (w *WriterV2) header(seg, prevSeg uint64, prevEnd int64) []byte {
	return appendHeader(nil, &segmentHeader{
		format:      FormatPerShard,
		shard:       w.shard,
		segment:     seg,
		prevSegment: prevSeg,
		prevEnd:     prevEnd,
		next:        []shardLSN{{shard: w.shard, next: w.next}},
	})
}

// Append writes entries as one batch (synced unless NoSync) and returns the
// LSN of the first entry and where the batch starts.
func (w *WriterV2) Append(entries [][]byte) (uint64, Position, error) {
	if w.log.err != nil {
		return 0, Position{}, w.log.err
	}
	if len(entries) == 0 {
		return 0, Position{}, fmt.Errorf("wal: append of an empty batch")
	}
	buf := appendBatchV2Prefix(w.log.buffer(), w.shard, w.next, len(entries))
	for _, e := range entries {
		buf = appendEntry(buf, e)
	}
	pos, err := w.log.append(buf)
	if err != nil {
		return 0, Position{}, err
	}
	first := w.next
	w.next += uint64(len(entries))
	return first, pos, nil
}

// Rotate closes the current segment and starts the next one.
func (w *WriterV2) Rotate() error { return w.log.rotate() }

// Close syncs what is buffered and closes the current segment.
func (w *WriterV2) Close() error { return w.log.close() }

// ReadV2 reads shard's format 2 log in dir from its first segment, calling
// fn for each batch (as a Batch with one section and Number 0), with the
// same rules and the same memory caveat as Read. The returned Tail has
// NextLSN[shard] and End; its format 3 fields are zero.
func ReadV2(fs vfs.FS, dir string, shard int, fn func(b Batch) error) (Tail, error) {
	if shard < 0 || shard >= meta.MaxShards {
		return Tail{}, fmt.Errorf("wal: shard %d out of range 0..%d", shard, meta.MaxShards-1)
	}
	ch := &chainV2{shard: shard}
	r := logReader{fs: fs, dir: dir, ch: ch, fn: fn}
	end, torn, ending, err := r.read(Position{})
	if err != nil {
		return Tail{}, err
	}
	t := Tail{End: end, Torn: torn, Ending: ending}
	for i := range t.NextLSN {
		t.NextLSN[i] = 1
	}
	t.NextLSN[shard] = ch.next
	return t, nil
}

// chainV2 holds the state a shard's next format 2 batch must continue.
type chainV2 struct {
	shard   int
	next    uint64
	scratch Batch
}

func (c *chainV2) header(h *segmentHeader, first bool) error {
	if h.format != FormatPerShard {
		return fmt.Errorf("a segment of log format %d in a format %d log", h.format, FormatPerShard)
	}
	if h.shard != c.shard {
		return fmt.Errorf("the segment belongs to shard %d's log, not shard %d's", h.shard, c.shard)
	}
	if first {
		c.next = h.next[0].next
		return nil
	}
	if h.next[0].next != c.next {
		return fmt.Errorf("the header gives next LSN %d, but the batches before it give %d", h.next[0].next, c.next)
	}
	return nil
}

func (c *chainV2) batch(p []byte, b *Batch) error {
	if err := decodeBatchV2(p, b); err != nil {
		return err
	}
	s := &b.Sections[0]
	if s.Shard != c.shard {
		return fmt.Errorf("a batch of shard %d in shard %d's log", s.Shard, c.shard)
	}
	if s.FirstLSN != c.next {
		return fmt.Errorf("a batch starting at LSN %d where LSN %d belongs", s.FirstLSN, c.next)
	}
	c.next += uint64(len(s.Entries))
	return nil
}

func (c *chainV2) torn(p []byte) (uint64, []TornSection) {
	d := decoder{p: p}
	if d.byte() != kindBatchV2 {
		return 0, nil
	}
	return 0, tornSections(&d, 1, func(shard int) uint64 {
		if shard != c.shard {
			return 0 // no LSN is 0: another shard's batch claims nothing
		}
		return c.next
	})
}

func (c *chainV2) ended([]byte) (endRecord, bool) { return endRecord{}, false }

func (c *chainV2) later(p []byte) bool {
	err := decodeBatchV2(p, &c.scratch)
	return err == nil && c.scratch.Sections[0].Shard == c.shard && c.scratch.Sections[0].FirstLSN > c.next
}

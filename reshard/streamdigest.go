package reshard

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// A streamDigest computes a new shard's digest (digest.go) from the keys
// and values handed to its store writer, in the order they are handed
// over, instead of reading the written store back: every item is read
// from those bytes (entries, messages, dedup, index and timer keys
// decoded; records as peekRecord says) with the checks the store reader
// applies to a run (record positions in sequence, as many records as the
// entry says, a journal that begins with its start record, run numbers
// and outbox sequence numbers below the header's), and its references
// are resolved through the plan's reverse map by new number,
// independently of the rewrite that made them. The items are the ones the read-back produced, in the
// same canonical form, so the digests are equal exactly when the read-back
// ones would be (a test computes both over random workloads). What it does
// not do is read the sstables: docs/reshard.md §6 says what that leaves.
type streamDigest struct {
	c     canon
	d     *digest
	shard int // the new shard
	// The run whose records are arriving (run.no 0: none). Its entry is
	// viewed (model.ViewRunEntry) in bytes that may be reused once add
	// returns: its strings are dropped and its workflow ID copied to wf.
	run struct {
		no      model.RunNo
		e       model.RunEntry
		wf      []byte
		records uint32 // how many arrived
	}
	header         bool
	nextRun        model.RunNo
	nextSeq        uint64
	maxRun, maxSeq uint64
}

func newStreamDigest(p *plan.Plan, d *digest, shard int) *streamDigest {
	s := &streamDigest{d: d.empty(), shard: shard}
	ids := plan.NewCache(p)
	s.c.id = func(ref model.RunRef) (uint64, bool, error) { return ids.IdentityAt(ref.Shard, ref.Run) }
	return s
}

func (s *streamDigest) fail(key []byte, format string, args ...any) error {
	return fmt.Errorf("internal error: checking new shard %d as it is written, key %q: %s; nothing was changed (reshard.new is removed): please report this",
		s.shard, key, fmt.Sprintf(format, args...))
}

// add digests one key and value, as the store writer gets them. Nothing
// decoded from them is kept once it returns (they are views, ViewStoreKey
// and the like: the fanout reuses its batches).
func (s *streamDigest) add(key, val []byte) error {
	k, err := store.ViewStoreKey(key)
	if err != nil {
		return s.fail(key, "%v", err)
	}
	if k.Kind == store.KeyRun && k.IsRecord {
		return s.record(key, val, k)
	}
	if err := s.endRun(key); err != nil {
		return err
	}
	c, d := &s.c, s.d
	switch k.Kind {
	case store.KeyHeader:
		h, err := model.DecodeHeader(val)
		if err != nil {
			return s.fail(key, "%v", err)
		}
		s.header, s.nextRun, s.nextSeq = true, h.NextRun, h.NextSeq
	case store.KeyRun:
		e, err := model.ViewRunEntry(val)
		if err != nil {
			return s.fail(key, "%v", err)
		}
		if e.WorkflowID == "" || (e.State == model.StateTombstone) != (e.Records == 0) {
			return s.fail(key, "a %s run entry of %q with %d records", e.State, e.WorkflowID, e.Records)
		}
		c.runItem(&e, int(e.Records))
		s.run.no, s.run.records = k.Run, 0
		s.run.wf = append(s.run.wf[:0], e.WorkflowID...)
		e.WorkflowID, e.Type = "", ""
		s.run.e = e
		s.maxRun = max(s.maxRun, uint64(k.Run))
	case store.KeyArchive:
		c.archiveOf(s.shard, k.Run)
		err := model.EachHistoryBytes(val, func(rec []byte) error {
			h, err := peekRecord(rec)
			if err != nil {
				return err
			}
			c.rawRecord(s.shard, rec, &h)
			return nil
		})
		if err != nil {
			return s.fail(key, "%v", err)
		}
		d.add(itemArchive, c.b)
	case store.KeyOutbox:
		m, err := model.DecodeMessage(val, k.Seq)
		if err != nil {
			return s.fail(key, "%v", err)
		}
		s.maxSeq = max(s.maxSeq, m.Seq)
		c.message(d, *m)
	case store.KeySeen:
		wf, err := model.ViewSeenValue(val)
		if err != nil {
			return s.fail(key, "%v", err)
		}
		c.seen(d, k.ID, wf)
	case store.KeyTimer:
		if len(val) != 0 {
			return s.fail(key, "a timer value of %d bytes", len(val))
		}
		c.timer(d, model.TimerKey{At: k.At, Run: k.Run, Pos: k.Pos}, s.shard)
	case store.KeyIndex:
		no, err := model.DecodeIndexValue(val)
		if err != nil {
			return s.fail(key, "%v", err)
		}
		c.index(d, k.ID, model.RunRef{Shard: s.shard, Run: no})
	}
	return c.err
}

// record adds journal record k.Pos of the run whose entry came last.
func (s *streamDigest) record(key, val []byte, k store.StoreKey) error {
	r := &s.run
	if r.no == 0 || k.Run != r.no {
		return s.fail(key, "a journal record without its run entry")
	}
	if k.Pos != r.records || k.Pos >= r.e.Records {
		return s.fail(key, "journal record at position %d, want position %d of %d", k.Pos, r.records, r.e.Records)
	}
	h, err := peekRecord(val)
	if err == nil && k.Pos == 0 && !h.HasRefs() {
		h, err = model.ScanRecord(val) // the start record's workflow ID (peekRecord scanned one with references)
	}
	if err != nil {
		return s.fail(key, "%v", err)
	}
	if h.Pos != k.Pos {
		return s.fail(key, "the record says position %d", h.Pos)
	}
	if k.Pos == 0 && (h.Kind != model.KindStart || !bytes.Equal(h.WorkflowID(val), r.wf)) {
		return s.fail(key, "run %d's journal does not begin with its start record", r.no)
	}
	r.records++
	s.c.rawRecord(s.shard, val, &h)
	return s.c.err
}

// endRun adds the run whose records were arriving, if any, once a key
// that is not one of its records comes.
func (s *streamDigest) endRun(key []byte) error {
	r := &s.run
	if r.no == 0 {
		return nil
	}
	if r.records != r.e.Records {
		return s.fail(key, "run %d's entry says %d journal records, %d were written", r.no, r.e.Records, r.records)
	}
	s.d.add(runKind(r.e.State), s.c.b)
	s.d.counts[itemRecord] += int64(r.records)
	r.no = 0
	return nil
}

// finish ends the stream: the last run is added, and the run and outbox
// numbers are checked against the header's.
func (s *streamDigest) finish() error {
	end := []byte("(the end)")
	if err := s.endRun(end); err != nil {
		return err
	}
	switch {
	case !s.header:
		return s.fail(end, "no header was written")
	case s.maxRun >= uint64(s.nextRun):
		return s.fail(end, "run %d is not below the header's next run number %d", s.maxRun, s.nextRun)
	case s.maxSeq >= s.nextSeq:
		return s.fail(end, "outbox message %d is not below the header's next seq %d", s.maxSeq, s.nextSeq)
	}
	return nil
}

// peekRecord reads a new store's record for its digest: a record with a
// run reference is scanned whole (ScanRecord: its references are read
// from where it says they are), any other only as far as its position
// (model.PeekRecord), since its canonical bytes are its bytes as they
// are. That leaves no record unchecked: the old side scanned every
// record whole before it was copied, and a reference-free record's bytes
// enter both digests as they are, so a new one that is not, byte for
// byte, an old record of the same run at the same position (damaged,
// cut, moved) makes the digests differ (docs/reshard.md §6).
func peekRecord(rec []byte) (model.RecordHead, error) {
	h, err := model.PeekRecord(rec)
	if err == nil && h.HasRefs() {
		h, err = model.ScanRecord(rec)
	}
	return h, err
}

// A pairFanout hands the pairs one goroutine produces (a store's merge
// from the sort) to consumers on goroutines of their own (the store's
// writer and its digest), in batches, each consumer seeing every pair in
// the order it was given: merging, writing and digesting a store are each
// about a third of its work, and a store written alone (the last of a
// shrink's few) then takes every core it can. The pairs are copied into
// the batch (the sort's buffers are reused once its callback returns); a
// batch goes back to the producer once every consumer is done with it,
// and fanoutBatches go round, so memory stays at that many batches.
type pairFanout struct {
	to     []chan *pairBatch // one per consumer
	free   chan *pairBatch
	done   chan fanoutResult
	failed atomic.Bool // a consumer failed: stop producing
	cur    *pairBatch
}

// A pairBatch is keys and values, one after the other in buf; ends holds
// where each ends. pending counts the consumers still reading it.
type pairBatch struct {
	buf     []byte
	ends    []int
	pending atomic.Int32
}

// newPairBatch is a batch made at about the size it is filled to, so
// that it is allocated once and not grown (each growth a new allocation
// and a copy) while it is first filled.
func newPairBatch() *pairBatch {
	return &pairBatch{buf: make([]byte, 0, pairBatchBytes+pairBatchBytes/16), ends: make([]int, 0, pairBatchBytes/32)}
}

// pairBatches holds the batches of finished fanouts for the next store's.
// A batch is about 1.3 MiB (its bytes and its ends), and fanoutBatches of
// them made fresh for every store cost the same whatever the store's
// size: zeroed, and faulted in wherever the heap grew for them (at 100k
// runs 7->12, about 4,600 of the run's 27,000 page faults for the 36
// batches of its 12 stores). What the pool holds the garbage collector
// may drop; a store then makes new ones.
var pairBatches = sync.Pool{New: func() any { return newPairBatch() }}

type fanoutResult struct {
	i   int
	err error
}

const (
	// pairBatchBytes is about what a batch holds before it is handed over.
	pairBatchBytes = 1 << 20
	// fanoutBatches is how many batches go round: one being filled, and
	// one for the slowest consumer to read while the others run ahead.
	fanoutBatches = 3
)

// newPairFanout starts one goroutine per consumer. A consumer that fails
// sees no more pairs; finish returns the first consumer's error (in the
// order given) that is not nil.
func newPairFanout(consumers ...func(key, val []byte) error) *pairFanout {
	f := &pairFanout{free: make(chan *pairBatch, fanoutBatches), done: make(chan fanoutResult, len(consumers))}
	for range fanoutBatches - 1 {
		f.free <- pairBatches.Get().(*pairBatch)
	}
	f.cur = pairBatches.Get().(*pairBatch)
	for i, consume := range consumers {
		ch := make(chan *pairBatch, fanoutBatches)
		f.to = append(f.to, ch)
		go f.consume(i, ch, consume)
	}
	return f
}

func (f *pairFanout) consume(i int, ch chan *pairBatch, consume func(key, val []byte) error) {
	var err error
	for b := range ch {
		for k := 0; err == nil && k < len(b.ends); k += 2 {
			start := 0
			if k > 0 {
				start = b.ends[k-1]
			}
			err = consume(b.buf[start:b.ends[k]], b.buf[b.ends[k]:b.ends[k+1]])
		}
		if err != nil {
			f.failed.Store(true)
		}
		if b.pending.Add(-1) == 0 {
			b.buf, b.ends = b.buf[:0], b.ends[:0]
			f.free <- b
		}
	}
	f.done <- fanoutResult{i, err}
}

// errFanoutFailed stops a store's merge once a consumer failed; finish
// says why.
var errFanoutFailed = errors.New("writing or digesting the store failed")

// add copies key and value into the current batch, and hands the batch
// over when it is full.
func (f *pairFanout) add(key, val []byte) error {
	b := f.cur
	b.buf = append(b.buf, key...)
	b.ends = append(b.ends, len(b.buf))
	b.buf = append(b.buf, val...)
	b.ends = append(b.ends, len(b.buf))
	if len(b.buf) < pairBatchBytes {
		return nil
	}
	if f.failed.Load() {
		return errFanoutFailed
	}
	f.send()
	f.cur = <-f.free
	return nil
}

func (f *pairFanout) send() {
	f.cur.pending.Store(int32(len(f.to)))
	for _, ch := range f.to {
		ch <- f.cur
	}
}

// finish hands over what is left, waits for every consumer and returns
// the first one's error that is not nil, in the consumers' order.
func (f *pairFanout) finish() error {
	sent := len(f.cur.ends) > 0
	if sent {
		f.send()
	}
	for _, ch := range f.to {
		close(ch)
	}
	errs := make([]error, len(f.to))
	for range f.to {
		r := <-f.done
		errs[r.i] = r.err
	}
	// Every consumer is done: each batch is back in free, or is cur if
	// that was not handed over. They go to the next store's fanout.
	if !sent {
		pairBatches.Put(f.cur)
	}
	f.cur = nil
	for len(f.free) > 0 {
		pairBatches.Put(<-f.free)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

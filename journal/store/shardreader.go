package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// Streamed recovery, part two: a ShardReader gives the state RecoverShard
// would recover for one shard — its store plus its log tail — as streams in
// key order, holding one run's journal at a time besides the tail's
// overlay.
//
// The overlay is a small *Shard to which the tail is applied with
// Shard.Apply, so that the rules of §6.3 have one implementation. Before
// the tail is applied it holds just what the tail's entries read: every
// run an entry names (loaded whole from the store by key), the ID-index
// entry of every workflow ID a start names with that run's entry (the
// index rule may compare the new run with it), and the stored outbox
// messages the tail acknowledges (one scan of the outbox keys). After the
// tail:
//
//   - a run the tail names is streamed from the overlay, any other from the
//     store;
//   - the store's outbox messages are streamed but those whose ID the tail
//     acknowledged or sent again; then the overlay's, all of them sent by
//     the tail, whose seqs follow the store's;
//   - seen and ID-index entries are the store's with the overlay's merged
//     in (the overlay's win);
//   - timers likewise, with the timers of the runs the tail names taken
//     from the overlay only.

// ShardReader streams one old shard of a closed log format 3 directory:
// its store, read-only with pebble iterators, with its log tail applied
// as an overlay. Memory is the overlay (bounded by the tail) plus one
// run's journal and archive at a time. Each stream opens its own
// iterators, so the streams may be read in any order and more than once;
// a stream is not safe for concurrent use. The point lookups (Header, Run,
// Entry, Record) may be called from several goroutines at once, alongside
// one stream.
type ShardReader struct {
	path    string
	store   *pebble.DB
	stored  model.CheckpointHeader // the store's checkpoint header
	overlay *model.Shard           // what the tail changed, after the tail
	touched map[model.RunNo]bool   // runs the tail names: streamed from the overlay
	msgGone map[string]bool        // message IDs the tail acked or sent: the store's copies are gone
	scratch *model.Shard           // LoadRunKey's target while decoding one run
	lookups lookupPool             // Run's iterators, kept between calls
	rawEnds []int                  // readRawRun's record ends, kept between runs
	// recycled are RawRuns given back (Recycle), which readRawRun reads
	// runs into.
	recycled sync.Pool
}

// OpenShardReader opens shard's store in dir (a directory of count shards)
// read-only and applies tail, that shard's log entries after its
// checkpoint (ReadTails), to an overlay. An entry that does not fit the
// state is a *LogError, as in recovery; a store that does not decode or
// contradicts itself where the reader looks is a *StoreError. The caller
// holds the directory's lock and must Close the reader.
func OpenShardReader(fs vfs.FS, dir string, shard, count int, tail *ShardTail) (*ShardReader, error) {
	return OpenShardReaderCache(fs, dir, shard, count, tail, nil)
}

// OpenShardReaderCache is OpenShardReader with the block cache the store
// uses (nil: a cache of its own, pebble's default size): readers of every
// shard of a directory open at once share one, so their memory does not
// grow with the shard count.
func OpenShardReaderCache(fs vfs.FS, dir string, shard, count int, tail *ShardTail, cache *pebble.Cache) (*ShardReader, error) {
	return OpenShardReaderWith(fs, dir, shard, count, tail, cache, nil)
}

// OpenShardReaderWith is OpenShardReaderCache with the store's tables
// read through bufs (nil: a block at a time, as pebble reads them), which
// the caller may share between readers.
func OpenShardReaderWith(fs vfs.FS, dir string, shard, count int, tail *ShardTail, cache *pebble.Cache, bufs *ReadBuffers) (*ShardReader, error) {
	if shard < 0 || shard >= count {
		return nil, fmt.Errorf("shard %d: the directory has shards 0..%d", shard, count-1)
	}
	if tail == nil || tail.Shard != shard {
		return nil, fmt.Errorf("reading shard %d of %s: no log tail for it", shard, dir)
	}
	path := StoreDir(fs, dir, shard)
	o := StoreOptions(fs, cache, true, false)
	o.FS = bufs.wrap(o.FS)
	store, err := OpenStoreWith(path, o, false)
	if err != nil {
		return nil, err
	}
	sr := &ShardReader{path: path, store: store, scratch: &model.Shard{Runs: map[model.RunNo]*model.Run{}}}
	if err := sr.open(tail, count); err != nil {
		store.Close()
		return nil, err
	}
	return sr, nil
}

func (sr *ShardReader) open(tail *ShardTail, count int) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	if err := sr.checkKeyKinds(); err != nil {
		return err
	}
	hdr, err := readStoreHeader(sr.store, sr.path, tail.Shard, count)
	if err != nil {
		return err
	}
	if hdr.LSN != tail.CheckpointLSN {
		return fmt.Errorf("reading shard store %s: its checkpoint is at LSN %d, the log tail given follows LSN %d", sr.path, hdr.LSN, tail.CheckpointLSN)
	}
	sr.stored = hdr
	o := model.NewShard(hdr.Shard, hdr.Count)
	o.LSN, o.NextRun, o.NextSeq = hdr.LSN, hdr.NextRun, hdr.NextSeq
	sr.overlay = o
	if err := sr.preload(tail); err != nil {
		return err
	}
	for i := range tail.Entries {
		e := &tail.Entries[i]
		if err := o.Apply(&e.Op); err != nil {
			return &LogError{Pos: e.Pos, Shard: o.Index, LSN: e.LSN, Err: err}
		}
		o.LSN = e.LSN
	}
	// Every stored message the overlay held was acked or replaced by the
	// tail (the first entry about its ID did either); what is left in the
	// overlay's outbox the tail sent.
	for id := range o.Outbox {
		sr.msgGone[id] = true
	}
	return nil
}

// preload fills the overlay with what the tail's entries read from the
// store (see the comment at the top of this file).
func (sr *ShardReader) preload(tail *ShardTail) error {
	o := sr.overlay
	sr.touched, sr.msgGone = map[model.RunNo]bool{}, map[string]bool{}
	started := map[string]bool{}
	for i := range tail.Entries {
		op := &tail.Entries[i].Op
		switch op.Kind {
		case model.OpStart, model.OpAppend, model.OpPark, model.OpLoad, model.OpTombstone:
			sr.touched[op.Run] = true
			if op.Kind == model.OpStart {
				started[op.Rec.WorkflowID] = true
			}
		case model.OpAck:
			sr.msgGone[op.MsgID] = true
		}
	}
	for _, no := range slices.Sorted(maps.Keys(sr.touched)) {
		if no >= sr.stored.NextRun {
			continue // started by the tail, or refused by Apply
		}
		r, err := sr.loadRun(no, true)
		if err != nil {
			return err
		}
		if r != nil {
			o.Runs[no] = r
		}
	}
	for _, id := range slices.Sorted(maps.Keys(started)) {
		no, ok, err := sr.indexEntry(id)
		if err != nil {
			return err
		}
		if !ok {
			continue // a new workflow ID
		}
		o.ByID[id] = no
		if _, ok := o.Runs[no]; !ok && no < sr.stored.NextRun {
			// The index rule may compare a new run with the ID's latest:
			// its entry is enough, and it stays the store's to stream.
			r, err := sr.loadRun(no, false)
			if err != nil {
				return err
			}
			if r != nil {
				o.Runs[no] = r
			}
		}
	}
	if len(sr.msgGone) > 0 {
		err := sr.storedOutbox(func(key []byte, m *model.Message) error {
			if !sr.msgGone[m.ID] {
				return nil
			}
			if _, dup := o.Outbox[m.ID]; dup {
				return sr.keyError(key, fmt.Errorf("message ID %q is in the outbox twice", m.ID))
			}
			o.Outbox[m.ID] = m
			return nil
		})
		if err != nil {
			return err
		}
	}
	o.RebuildTimers()
	return nil
}

// loadRun reads run no from the store by key: with its journal, or (for
// the index rule's comparison) its entry alone. It returns nil if the
// store has no such run.
func (sr *ShardReader) loadRun(no model.RunNo, journal bool) (*model.Run, error) {
	if !journal {
		val, closer, err := sr.store.Get(RunKey(no))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, WrapStoreError(sr.path, "reading", err)
		}
		defer closer.Close()
		var cur *model.Run
		var want uint32
		if err := LoadRunKey(sr.scratch, StoreKey{Kind: KeyRun, Run: no}, val, &cur, &want); err != nil {
			return nil, sr.keyError(RunKey(no), err)
		}
		delete(sr.scratch.Runs, no)
		cur.Journal = nil
		return cur, nil
	}
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: RunKey(no), UpperBound: RunKey(no + 1)})
	if err != nil {
		return nil, WrapStoreError(sr.path, "reading", err)
	}
	var r *model.Run
	if it.First() {
		r, err = sr.readRun(it, sr.scratch)
		if err == nil {
			err = sr.checkStoredRun(r)
		}
	}
	return r, CloseIter(sr.path, it, err)
}

// readRun decodes the run whose entry is the iterator's current key and
// its journal records, which follow it, and leaves the iterator just past
// them. scratch is LoadRunKey's target.
func (sr *ShardReader) readRun(it *pebble.Iterator, scratch *model.Shard) (*model.Run, error) {
	var cur *model.Run
	var want uint32
	for ok := true; ok; ok = it.Next() {
		key := it.Key()
		k, err := ParseStoreKey(key)
		if err != nil {
			return nil, sr.keyError(nil, err)
		}
		if cur != nil && !k.IsRecord {
			break // the next run's entry
		}
		if err := LoadRunKey(scratch, k, it.Value(), &cur, &want); err != nil {
			return nil, sr.keyError(key, err)
		}
	}
	if err := it.Error(); err != nil {
		return nil, WrapStoreError(sr.path, "reading", err)
	}
	delete(scratch.Runs, cur.No)
	if uint32(len(cur.Journal)) != want {
		return nil, sr.keyError(RunKey(cur.No), fmt.Errorf("the run entry says %d journal records, the store has %d", want, len(cur.Journal)))
	}
	return cur, nil
}

// checkStoredRun checks what loading a store checks of one run that does
// not need the rest of the store.
func (sr *ShardReader) checkStoredRun(r *model.Run) error {
	if r.No >= sr.stored.NextRun {
		return sr.keyError(RunKey(r.No), fmt.Errorf("run %d is not below the header's next run number %d", r.No, sr.stored.NextRun))
	}
	if r.State != model.StateTombstone {
		if st := r.Start(); st == nil || st.Kind != model.KindStart || st.WorkflowID != r.WorkflowID {
			return sr.keyError(RunKey(r.No), fmt.Errorf("run %d's journal does not begin with its start record", r.No))
		}
	}
	return nil
}

// indexEntry reads the ID-index entry of a workflow ID.
func (sr *ShardReader) indexEntry(id string) (model.RunNo, bool, error) {
	key := IndexKey(id)
	val, closer, err := sr.store.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, WrapStoreError(sr.path, "reading", err)
	}
	defer closer.Close()
	no, err := model.DecodeIndexValue(val)
	if err != nil {
		return 0, false, sr.keyError(key, err)
	}
	return no, true, nil
}

// keyKindGaps are the key ranges no store key may be in: the bytes
// before, between and after the kinds of storekey.go (and "H" followed by
// anything).
var keyKindGaps = [][2][]byte{
	{nil, {KeyArchive}}, {{KeyArchive + 1}, {KeyHeader}}, {{KeyHeader, 0}, {KeyIndex}},
	{{KeyIndex + 1}, {KeyOutbox}}, {{KeyOutbox + 1}, {KeyRun}}, {{KeyTimer + 1}, nil},
}

// checkKeyKinds refuses a store holding a key of no known kind, which
// loading a whole store would find; the streams only look at their own
// kinds. One seek per gap between the kinds.
func (sr *ShardReader) checkKeyKinds() error {
	it, err := sr.store.NewIter(nil)
	if err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	for _, gap := range keyKindGaps {
		ok := it.First()
		if gap[0] != nil {
			ok = it.SeekGE(gap[0])
		}
		if ok && (gap[1] == nil || bytes.Compare(it.Key(), gap[1]) < 0) {
			_, perr := ParseStoreKey(it.Key())
			if perr == nil {
				perr = fmt.Errorf("store key %q: not a key of this layout", it.Key())
			}
			err = sr.keyError(nil, perr)
			break
		}
	}
	if err == nil {
		if ierr := it.Error(); ierr != nil {
			err = WrapStoreError(sr.path, "reading", ierr)
		}
	}
	return CloseIter(sr.path, it, err)
}

// keyError is a *StoreError for key (nil: the store as a whole).
func (sr *ShardReader) keyError(key []byte, err error) error {
	ks := ""
	if key != nil {
		ks = fmt.Sprintf("%q", key)
		if k, perr := ParseStoreKey(key); perr == nil {
			ks = k.String()
		}
	}
	return &StoreError{Path: sr.path, Key: ks, Err: err}
}

// CloseIter closes it and returns err, or the error closing it.
func CloseIter(path string, it *pebble.Iterator, err error) error {
	if cerr := it.Close(); err == nil && cerr != nil {
		err = WrapStoreError(path, "reading", cerr)
	}
	return err
}

// scan calls fn for every key of one kind in key order, parsed. An error
// from fn is returned as is.
func (sr *ShardReader) scan(kind byte, fn func(key, val []byte, k StoreKey) error) error {
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
	if err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		k, perr := ParseStoreKey(it.Key())
		if perr != nil {
			err = sr.keyError(nil, perr)
			break
		}
		err = fn(it.Key(), it.Value(), k)
	}
	if err == nil {
		if ierr := it.Error(); ierr != nil {
			err = WrapStoreError(sr.path, "reading", ierr)
		}
	}
	return CloseIter(sr.path, it, err)
}

// storedOutbox calls fn for each of the store's outbox messages in seq
// order, checking that it decodes and is below the header's next seq.
func (sr *ShardReader) storedOutbox(fn func(key []byte, m *model.Message) error) error {
	return sr.scan(KeyOutbox, func(key, val []byte, k StoreKey) error {
		m, err := model.DecodeMessage(val, k.Seq)
		if err != nil {
			return sr.keyError(key, err)
		}
		if m.Seq >= sr.stored.NextSeq {
			return sr.keyError(key, fmt.Errorf("outbox message %d is not below the header's next seq %d", m.Seq, sr.stored.NextSeq))
		}
		return fn(key, m)
	})
}

// StoredHeader is the store's checkpoint header, before the tail.
func (sr *ShardReader) StoredHeader() model.CheckpointHeader { return sr.stored }

// Header is the shard's checkpoint header as recovery would leave it: the
// LSN, next run and next seq after the tail, the rest as the store has it.
func (sr *ShardReader) Header() model.CheckpointHeader {
	h, o := sr.stored, sr.overlay
	h.LSN, h.NextRun, h.NextSeq = o.LSN, o.NextRun, o.NextSeq
	return h
}

// Runs calls fn for every run of the shard in ascending run number, with
// its whole journal, after the tail; for a tombstone, archive is its
// archived history (nil otherwise). fn must not modify r or archive, and
// must not keep them if memory is to stay bounded. The reader checks each
// stored run as loading a store does (records at positions 0..n-1 with
// the Start first, the number below the header's next run, a tombstone
// with an archive and no records, no archive without a tombstone). Runs
// checks ctx between runs and returns ctx.Err() when it is done; an error
// from fn is returned as is.
func (sr *ShardReader) Runs(ctx context.Context, fn func(r *model.Run, archive []model.Record) error) (err error) {
	return eachRun(ctx, sr, runSource[decodedRun]{
		overlay: func(r *model.Run, archive []model.Record) (decodedRun, error) { return decodedRun{r, archive}, nil },
		stored: func(it *pebble.Iterator, _ StoreKey, arch *archiveCursor) (decodedRun, error) {
			r, err := sr.readRun(it, sr.scratch)
			if err != nil {
				return decodedRun{}, err
			}
			if err := sr.checkStoredRun(r); err != nil {
				return decodedRun{}, err
			}
			archive, err := arch.take(r.No, r.State == model.StateTombstone)
			if err != nil {
				return decodedRun{}, err
			}
			return decodedRun{r, archive}, nil
		},
		skipArchive: func(arch *archiveCursor, no model.RunNo, tombstone bool) error {
			_, err := arch.take(no, tombstone)
			return err
		},
	}, func(d decodedRun) error { return fn(d.run, d.archive) })
}

// decodedRun is a run as Runs hands it out: decoded, with its archive.
type decodedRun struct {
	run     *model.Run
	archive []model.Record
}

// runSource is how eachRun gets each run in the form its caller hands
// out: decoded (Runs) or as the store's bytes (RawRuns, rawrun.go).
type runSource[R any] struct {
	// overlay converts a run of the overlay, with its archive.
	overlay func(r *model.Run, archive []model.Record) (R, error)
	// stored reads and checks the stored run whose entry is the
	// iterator's current key k, and its archive through arch, leaving the
	// iterator past the run.
	stored func(it *pebble.Iterator, k StoreKey, arch *archiveCursor) (R, error)
	// skipArchive consumes (and checks) the stored archive of a run the
	// overlay has.
	skipArchive func(arch *archiveCursor, no model.RunNo, tombstone bool) error
}

// eachRun is Runs and RawRuns: the runs of the overlay and of the store
// merged in run number order, each store run the overlay has skipped (its
// archive still consumed), every run handed to fn in src's form after a
// check of ctx.
func eachRun[R any](ctx context.Context, sr *ShardReader, src runSource[R], fn func(R) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	o := sr.overlay
	var mine []model.RunNo // the overlay's runs, in order
	for no := range sr.touched {
		if _, ok := o.Runs[no]; ok {
			mine = append(mine, no)
		}
	}
	slices.Sort(mine)
	emit := func(r R) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(r)
	}
	// emitMine emits the overlay's runs below no (all of them: 0).
	emitMine := func(below model.RunNo) error {
		for len(mine) > 0 && (below == 0 || mine[0] < below) {
			r := o.Runs[mine[0]]
			mine = mine[1:]
			v, err := src.overlay(r, o.Archive[r.No])
			if err != nil {
				return err
			}
			if err := emit(v); err != nil {
				return err
			}
		}
		return nil
	}
	arch, err := sr.newArchiveCursor()
	if err != nil {
		return err
	}
	defer func() { err = CloseIter(sr.path, arch.it, err) }()
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyRun}, UpperBound: []byte{KeyRun + 1}})
	if err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	defer func() { err = CloseIter(sr.path, it, err) }()
	for ok := it.First(); ok; {
		k, err := ParseStoreKey(it.Key())
		if err != nil {
			return sr.keyError(nil, err)
		}
		if err := emitMine(k.Run); err != nil {
			return err
		}
		if sr.touched[k.Run] && !k.IsRecord {
			// Streamed from the overlay; checked when it was loaded. Its
			// stored state still decides whether an archive may follow.
			if k.Run >= sr.stored.NextRun {
				return sr.keyError(it.Key(), fmt.Errorf("run %d is not below the header's next run number %d", k.Run, sr.stored.NextRun))
			}
			e, err := model.DecodeRunEntry(it.Value())
			if err != nil {
				return sr.keyError(it.Key(), err)
			}
			if err := src.skipArchive(arch, k.Run, e.State == model.StateTombstone); err != nil {
				return err
			}
			ok = it.SeekGE(RunKey(k.Run + 1))
			continue
		}
		v, err := src.stored(it, k, arch)
		if err != nil {
			return err
		}
		ok = it.Valid()
		if err := emit(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	if err := arch.finish(); err != nil {
		return err
	}
	return emitMine(0)
}

// skipRecords moves it from a run's entry past the run's journal
// records (the keys that begin with the entry's key): to the first key at
// or after RunKey(run+1), where SeekGE to it lands. A run has a few
// records, and stepping over them costs a fraction of a seek.
func skipRecords(it *pebble.Iterator) bool {
	var b [16]byte
	entry := append(b[:0], it.Key()...)
	ok := it.Next()
	for ok {
		key := it.Key()
		if len(key) <= len(entry) || !bytes.Equal(key[:len(entry)], entry) {
			break
		}
		ok = it.Next()
	}
	return ok
}

// archiveCursor walks the store's archives ("A" keys) in step with its
// runs, so that each archive is read once and matched with its run.
type archiveCursor struct {
	sr *ShardReader
	it *pebble.Iterator
	ok bool
}

func (sr *ShardReader) newArchiveCursor() (*archiveCursor, error) {
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyArchive}, UpperBound: []byte{KeyArchive + 1}})
	if err != nil {
		return nil, WrapStoreError(sr.path, "reading", err)
	}
	return &archiveCursor{sr: sr, it: it, ok: it.First()}, nil
}

// take returns the archive of stored run no, decoded; see takeWith.
func (c *archiveCursor) take(no model.RunNo, tombstone bool) ([]model.Record, error) {
	var recs []model.Record
	err := c.takeWith(no, tombstone, func(val []byte) (err error) {
		recs, err = model.DecodeHistory(val)
		return err
	})
	return recs, err
}

// takeWith calls read with the archive of stored run no (the value is
// valid only during the call), which must exist exactly when the run is
// a tombstone, after checking that no archive before it is left over;
// read is not called when the run has no archive.
func (c *archiveCursor) takeWith(no model.RunNo, tombstone bool, read func(val []byte) error) error {
	if c.ok {
		key := c.it.Key()
		k, err := ParseStoreKey(key)
		if err != nil {
			return c.sr.keyError(nil, err)
		}
		if k.Run < no || (k.Run == no && !tombstone) {
			return c.sr.keyError(key, fmt.Errorf("archived history of run %d, which is not a tombstone", k.Run))
		}
		if k.Run == no {
			if err := read(c.it.Value()); err != nil {
				return c.sr.keyError(key, err)
			}
			c.ok = c.it.Next()
			return nil
		}
	}
	if err := c.it.Error(); err != nil {
		return WrapStoreError(c.sr.path, "reading", err)
	}
	if tombstone {
		return c.sr.keyError(RunKey(no), fmt.Errorf("tombstoned run %d has no archived history", no))
	}
	return nil
}

// finish refuses an archive after the last run.
func (c *archiveCursor) finish() error {
	if c.ok {
		key := c.it.Key()
		k, err := ParseStoreKey(key)
		if err != nil {
			return c.sr.keyError(nil, err)
		}
		return c.sr.keyError(key, fmt.Errorf("archived history of run %d, which is not a tombstone", k.Run))
	}
	if err := c.it.Error(); err != nil {
		return WrapStoreError(c.sr.path, "reading", err)
	}
	return nil
}

// Outbox calls fn for every outbox message after the tail, in ascending
// seq: the store's, but those the tail acknowledged or sent again, then
// those the tail sent. fn must not modify m. An error from fn is returned
// as is.
func (sr *ShardReader) Outbox(fn func(m *model.Message) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	err = sr.storedOutbox(func(_ []byte, m *model.Message) error {
		if sr.msgGone[m.ID] {
			return nil
		}
		return fn(m)
	})
	if err != nil {
		return err
	}
	for _, m := range sr.overlay.SortedOutbox() {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// Seen calls fn for every receiver-dedup entry after the tail, in message
// ID order: the store's merged with those the tail added. An error from fn
// is returned as is.
func (sr *ShardReader) Seen(fn func(msgID, workflowID string) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	seen := sr.overlay.Seen
	m := merger[string]{keys: slices.Sorted(maps.Keys(seen)), cmp: strings.Compare,
		emit: func(id string) error { return fn(id, seen[id]) }}
	err = sr.scan(KeySeen, func(key, val []byte, k StoreKey) error {
		wf, err := model.DecodeSeenValue(val)
		if err != nil {
			return sr.keyError(key, err)
		}
		if mine, err := m.upTo(k.ID); mine || err != nil {
			return err
		}
		return fn(k.ID, wf)
	})
	if err != nil {
		return err
	}
	return m.rest()
}

// Index calls fn for every ID-index entry after the tail, in workflow ID
// order: the store's "I" keys, and for each workflow ID a start in the
// tail names, the entry Shard.Apply left (so the index rule is Apply's).
// The stored entries are not checked against the runs (loading a whole
// store does that). An error from fn is returned as is.
func (sr *ShardReader) Index(fn func(workflowID string, no model.RunNo) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	ids := sr.overlay.ByID
	m := merger[string]{keys: slices.Sorted(maps.Keys(ids)), cmp: strings.Compare,
		emit: func(id string) error { return fn(id, ids[id]) }}
	err = sr.scan(KeyIndex, func(key, val []byte, k StoreKey) error {
		no, err := model.DecodeIndexValue(val)
		if err != nil {
			return sr.keyError(key, err)
		}
		if mine, err := m.upTo(k.ID); mine || err != nil {
			return err
		}
		return fn(k.ID, no)
	})
	if err != nil {
		return err
	}
	return m.rest()
}

// Timers calls fn for every pending timer after the tail, in fire-time
// order (the store's "T" key order): the store's, but the timers of the
// runs the tail changed, which come from the overlay. The stored timers
// are not checked against the journals (loading a whole store does that).
// An error from fn is returned as is.
func (sr *ShardReader) Timers(fn func(model.TimerKey) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	m := merger[model.TimerKey]{keys: slices.SortedFunc(maps.Keys(sr.overlay.Timers), model.CompareTimers), cmp: model.CompareTimers, emit: fn}
	err = sr.scan(KeyTimer, func(key, val []byte, k StoreKey) error {
		if len(val) != 0 {
			return sr.keyError(key, fmt.Errorf("timer value of %d bytes, want none", len(val)))
		}
		t := model.TimerKey{At: k.At, Run: k.Run, Pos: k.Pos}
		if mine, err := m.upTo(t); mine || err != nil || sr.touched[t.Run] {
			return err
		}
		return fn(t)
	})
	if err != nil {
		return err
	}
	return m.rest()
}

// merger merges the overlay's sorted keys into a stream of the store's.
type merger[K any] struct {
	keys []K
	cmp  func(a, b K) int
	emit func(K) error
}

// upTo emits the overlay's keys up to k and reports whether k was one of
// them: the overlay's entry replaces the store's.
func (m *merger[K]) upTo(k K) (bool, error) {
	for len(m.keys) > 0 {
		c := m.cmp(m.keys[0], k)
		if c > 0 {
			break
		}
		if err := m.emit(m.keys[0]); err != nil {
			return false, err
		}
		m.keys = m.keys[1:]
		if c == 0 {
			return true, nil
		}
	}
	return false, nil
}

// rest emits the overlay's keys after the store's last.
func (m *merger[K]) rest() error {
	for _, k := range m.keys {
		if err := m.emit(k); err != nil {
			return err
		}
	}
	m.keys = nil
	return nil
}

// Close closes the store.
func (sr *ShardReader) Close() error {
	if sr.store == nil {
		return nil
	}
	err := sr.lookups.close()
	if cerr := sr.store.Close(); err == nil {
		err = cerr
	}
	sr.store = nil
	if err != nil {
		return fmt.Errorf("closing shard store %s: %w", sr.path, err)
	}
	return nil
}

// RunEntries calls fn with the number and entry of every run in ascending
// number, after the tail, without reading journals or archives: a store
// iterator visits each run's entry key and seeks past its records. It is
// for a pass that needs only who each run is (reshard's plan); Runs reads
// and checks everything.
func (sr *ShardReader) RunEntries(ctx context.Context, fn func(no model.RunNo, e model.RunEntry) error) error {
	return sr.runEntries(ctx, false, fn)
}

// RunEntryViews is RunEntries with each stored entry's strings viewed in
// the store's bytes (model.ViewRunEntry): nothing is allocated for them,
// and they are valid only until fn returns.
func (sr *ShardReader) RunEntryViews(ctx context.Context, fn func(no model.RunNo, e model.RunEntry) error) error {
	return sr.runEntries(ctx, true, fn)
}

func (sr *ShardReader) runEntries(ctx context.Context, view bool, fn func(no model.RunNo, e model.RunEntry) error) (err error) {
	defer RecoverStoreFatal(sr.path, &err)
	o := sr.overlay
	var mine []model.RunNo
	for no := range sr.touched {
		if _, ok := o.Runs[no]; ok {
			mine = append(mine, no)
		}
	}
	slices.Sort(mine)
	emitMine := func(below model.RunNo) error {
		for len(mine) > 0 && (below == 0 || mine[0] < below) {
			r := o.Runs[mine[0]]
			mine = mine[1:]
			if err := fn(r.No, model.EntryOf(r)); err != nil {
				return err
			}
		}
		return nil
	}
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyRun}, UpperBound: []byte{KeyRun + 1}})
	if err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	defer func() { err = CloseIter(sr.path, it, err) }()
	n := 0
	for ok := it.First(); ok; {
		k, err := ParseStoreKey(it.Key())
		if err != nil {
			return sr.keyError(nil, err)
		}
		if k.IsRecord {
			return sr.keyError(it.Key(), fmt.Errorf("journal record of run %d without its run entry", k.Run))
		}
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := emitMine(k.Run); err != nil {
			return err
		}
		if !sr.touched[k.Run] {
			decode := model.DecodeRunEntry
			if view {
				decode = model.ViewRunEntry
			}
			e, err := decode(it.Value())
			if err != nil {
				return sr.keyError(it.Key(), err)
			}
			if err := fn(k.Run, e); err != nil {
				return err
			}
		}
		if k.Run >= model.MaxRunNo {
			break
		}
		ok = skipRecords(it)
	}
	if err := it.Error(); err != nil {
		return WrapStoreError(sr.path, "reading", err)
	}
	return emitMine(0)
}

// Run reads run no by key as recovery would leave it (the overlay's copy
// for a run the tail names), with its history: its journal, or for a
// tombstone its archived history. ok is false when the shard has no such
// run. It is for point lookups while other streams run (a reference
// checked or rendered); it keeps its iterators open between calls, one
// per concurrent caller, closed by Close. The run is checked as Runs
// checks it.
func (sr *ShardReader) Run(no model.RunNo) (r *model.Run, history []model.Record, ok bool, err error) {
	defer RecoverStoreFatal(sr.path, &err)
	if sr.touched[no] {
		r, ok := sr.overlay.Runs[no]
		if !ok {
			return nil, nil, false, nil
		}
		if r.State == model.StateTombstone {
			return r, sr.overlay.Archive[no], true, nil
		}
		return r, r.Journal, true, nil
	}
	c, err := sr.takeCursor()
	if err != nil {
		return nil, nil, false, err
	}
	defer sr.lookups.put(c)
	if !c.it.SeekGE(RunKey(no)) {
		if err := c.it.Error(); err != nil {
			return nil, nil, false, WrapStoreError(sr.path, "reading", err)
		}
		return nil, nil, false, nil
	}
	if k, err := ParseStoreKey(c.it.Key()); err != nil || k.Run != no || k.IsRecord {
		return nil, nil, false, nil // another run's key: no such run
	}
	if r, err = sr.readRun(c.it, c.scratch); err != nil {
		return nil, nil, false, err
	}
	if err := sr.checkStoredRun(r); err != nil {
		return nil, nil, false, err
	}
	if r.State != model.StateTombstone {
		return r, r.Journal, true, nil
	}
	key := ArchiveKey(no)
	val, closer, err := sr.store.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, false, sr.keyError(RunKey(no), fmt.Errorf("tombstoned run %d has no archived history", no))
	}
	if err != nil {
		return nil, nil, false, WrapStoreError(sr.path, "reading", err)
	}
	defer closer.Close()
	if history, err = model.DecodeHistory(val); err != nil {
		return nil, nil, false, sr.keyError(key, err)
	}
	return r, history, true, nil
}

// Entry reads the entry of run no as recovery would leave it, without
// its journal: who the run is. ok is false when the shard has no such run.
func (sr *ShardReader) Entry(no model.RunNo) (e model.RunEntry, ok bool, err error) {
	defer RecoverStoreFatal(sr.path, &err)
	if sr.touched[no] {
		r, ok := sr.overlay.Runs[no]
		if !ok {
			return model.RunEntry{}, false, nil
		}
		return model.EntryOf(r), true, nil
	}
	c, err := sr.takeCursor()
	if err != nil {
		return model.RunEntry{}, false, err
	}
	defer sr.lookups.put(c)
	return sr.storedEntry(c, no)
}

// StoreBytes is the disk space the shard's store uses (pebble's estimate).
func (sr *ShardReader) StoreBytes() uint64 { return sr.store.Metrics().DiskSpaceUsage() }

// RawBytes is how many bytes the store's keys and values take
// uncompressed (storeRawBytes).
func (sr *ShardReader) RawBytes() (uint64, error) { return storeRawBytes(sr.store, sr.path) }

// storeRawBytes is how many bytes the keys and values of the store db (at
// path) take uncompressed: the sum of its tables' raw key and value sizes
// (which count every version a table holds, so it can only overstate what
// one reading returns) and the bytes of its write-ahead log, which hold
// what is not in a table yet. It reads each table's properties block once.
func storeRawBytes(db *pebble.DB, path string) (uint64, error) {
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, fmt.Errorf("reading the table properties of the store %s: %w", path, err)
	}
	n := db.Metrics().WAL.Size // what is not in a table yet
	for _, tables := range levels {
		for _, t := range tables {
			if t.Properties != nil {
				n += t.Properties.RawKeySize + t.Properties.RawValueSize
			}
		}
	}
	return n, nil
}

// Record reads record pos of run no's history (its journal, or for a
// tombstone its archived history) and the run's entry, as recovery would
// leave them, without reading the rest of the journal. n is the history's
// length; rec is nil when pos is not below it. ok is false when the shard
// has no such run.
func (sr *ShardReader) Record(no model.RunNo, pos uint32) (e model.RunEntry, rec *model.Record, n int, ok bool, err error) {
	defer RecoverStoreFatal(sr.path, &err)
	if sr.touched[no] {
		r, ok := sr.overlay.Runs[no]
		if !ok {
			return model.RunEntry{}, nil, 0, false, nil
		}
		h := r.Journal
		if r.State == model.StateTombstone {
			h = sr.overlay.Archive[no]
		}
		if int(pos) < len(h) {
			c := h[pos]
			rec = &c
		}
		return model.EntryOf(r), rec, len(h), true, nil
	}
	c, err := sr.takeCursor()
	if err != nil {
		return model.RunEntry{}, nil, 0, false, err
	}
	defer sr.lookups.put(c)
	if e, ok, err = sr.storedEntry(c, no); !ok || err != nil {
		return e, nil, 0, ok, err
	}
	if e.State != model.StateTombstone {
		n = int(e.Records)
		if int(pos) >= n {
			return e, nil, n, true, nil
		}
		key := RecordKey(no, pos)
		val, found, err := sr.seekExact(c, key)
		if err != nil {
			return e, nil, 0, false, err
		}
		if !found {
			return e, nil, 0, false, sr.keyError(key, fmt.Errorf("run %d's entry implies this key, the store does not have it", no))
		}
		r, err := model.DecodeRecord(val)
		if err != nil {
			return e, nil, 0, false, sr.keyError(key, err)
		}
		return e, &r, n, true, nil
	}
	key := ArchiveKey(no)
	decode := func(val []byte) error {
		h, err := model.DecodeHistory(val)
		if int(pos) < len(h) {
			rec = &h[pos]
		}
		n = len(h)
		return err
	}
	val, closer, err := sr.store.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return e, nil, 0, false, sr.keyError(key, fmt.Errorf("run %d's entry implies this key, the store does not have it", no))
	}
	if err != nil {
		return e, nil, 0, false, WrapStoreError(sr.path, "reading", err)
	}
	defer closer.Close()
	if err := decode(val); err != nil {
		return e, nil, 0, false, sr.keyError(key, err)
	}
	return e, rec, n, true, nil
}

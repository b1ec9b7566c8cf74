package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
)

// A shard store is a pebble database holding one shard's checkpointed
// state under the key layout of storekey.go. It is written only by
// checkpoints (one atomic, synced batch each) and by WriteShardStore (a
// fresh store built from sorted sstables).

// StoreError is a problem with a shard store's content: a key that does
// not decode, or a store that contradicts itself. The store is damaged,
// unless Err is a *StoreVersionError: a store of a layout version this
// fusee does not read.
type StoreError struct {
	Path string // the store directory
	Key  string // the key, as StoreKey.String renders it ("" for the store as a whole)
	Err  error
}

func (e *StoreError) Error() string {
	where := e.Path
	if e.Key != "" {
		where += ": key " + e.Key
	}
	var ve *model.StoreVersionError
	if errors.As(e.Err, &ve) {
		return fmt.Sprintf("shard store %s: %v", where, e.Err) // not damage: the message says what to do
	}
	return fmt.Sprintf("shard store %s: %v; the store is damaged: restore the directory from a backup (fusee verify names every damaged part)", where, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// StoreCorruptionError is a shard store whose files fail pebble's own
// checks (a checksum mismatch in an sstable, say): the bytes on disk are
// not what pebble wrote. The store is damaged and must be restored.
type StoreCorruptionError struct {
	Path string // the store directory
	File string // the damaged file's name within Path ("" when pebble did not say)
	Err  error  // pebble's error
}

func (e *StoreCorruptionError) Error() string {
	return e.Problem() + "; the shard store is damaged; restore the directory from a backup"
}

// Problem is the message without the advice: what is wrong and where.
func (e *StoreCorruptionError) Problem() string {
	where := e.Path
	if e.File != "" {
		where += ": file " + e.File
	}
	return fmt.Sprintf("shard store %s is corrupt: %s", where, corruptionMessage(e.Err))
}

// StoreOpenError is a shard store pebble would not open for a reason it
// did not itself call corruption: a file the store's MANIFEST lists is
// missing or has another size, a permission, an I/O error.
type StoreOpenError struct {
	Path string // the store directory
	What string // what was being done: "opening", "reading"
	Err  error  // pebble's error
}

func (e *StoreOpenError) Error() string {
	return fmt.Sprintf("%s shard store %s: %v", e.What, e.Path, e.Err)
}

func (e *StoreOpenError) Unwrap() error { return e.Err }

// corruptionMessage is err's message without the "<corruption detail
// carrier>" line pebble joins to a corruption error (the detail it carries
// is in StoreCorruptionError.File).
func corruptionMessage(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var parts []string
		for _, e := range j.Unwrap() {
			if pebble.ExtractDataCorruptionInfo(e) == nil || pebble.IsCorruptionError(e) {
				parts = append(parts, e.Error())
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n<corruption detail carrier>")
	return msg
}

func (e *StoreCorruptionError) Unwrap() error { return e.Err }

// WrapStoreError wraps an error pebble returned while doing what (opening,
// reading) for the store at path: on-disk corruption becomes a
// *StoreCorruptionError naming the file, anything else is wrapped as is.
func WrapStoreError(path, what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *StoreCorruptionError
	if errors.As(err, &ce) {
		return err
	}
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		file := ""
		if info.Path != "" && !info.IsRemote {
			file = filepath.Base(info.Path)
		}
		return &StoreCorruptionError{Path: path, File: file, Err: err}
	}
	if pebble.IsCorruptionError(err) {
		return &StoreCorruptionError{Path: path, Err: err}
	}
	return &StoreOpenError{Path: path, What: what, Err: err}
}

// quietLogger keeps pebble from printing to stderr: a store's problems
// reach the caller as errors.
//
// Fatalf is what pebble calls when it cannot go on. It panics with a
// storeFatal, which the store code in this package (OpenStore, LoadShard:
// see RecoverStoreFatal) turns back into an error for the caller; pebble
// calls it only from the goroutine doing the operation that failed. With
// StoreOptions' event listener, on-disk corruption found by a read is not
// fatal in the first place: the read returns an error.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(f string, args ...any) {
	panic(storeFatal{fatalError(f, args...)})
}

// storeFatal is the value quietLogger.Fatalf panics with.
type storeFatal struct{ err error }

// RecoverStoreFatal, deferred by a function that calls into pebble for the
// store at path, turns a storeFatal panic into *errp, and so a panic of
// pebble's own whose value is a file system error (a failed directory
// fsync: see fatal.go). A Fatalf caused by the file system failing is
// that failure, not damage. Any other panic goes on.
func RecoverStoreFatal(path string, errp *error) {
	r := recover()
	if r == nil {
		return
	}
	if err, ok := r.(error); ok && ioFailure(err) {
		*errp = fmt.Errorf("shard store %s: %w", path, err)
		return
	}
	f, ok := r.(storeFatal)
	if !ok {
		panic(r)
	}
	if ioFailure(f.err) {
		*errp = fmt.Errorf("shard store %s: %w", path, f.err)
		return
	}
	*errp = &StoreCorruptionError{Path: path, Err: f.err}
}

// storeFormat is the pebble format major version new stores are created
// with. Existing stores are opened at whatever version they have (never
// ratcheted), so that a read-only open writes nothing.
const storeFormat = pebble.FormatNewest

// StoreOptions are the pebble options of a shard store. cache is shared by
// every store of a directory (nil: each store gets a small one).
func StoreOptions(fs vfs.FS, cache *pebble.Cache, readOnly, create bool) *pebble.Options {
	o := &pebble.Options{
		// Through meta.FS, pebble's LOCK is a flock(2) lock, which an
		// existing LOCK needs no write access for (a read-only open).
		FS:     meta.FS(fs),
		Cache:  cache,
		Logger: quietLogger{},
		// Many shards open at once: keep each store's memtable small.
		// Checkpoint batches are the only writes.
		MemTableSize:       1 << 20,
		ReadOnly:           readOnly,
		ErrorIfNotExists:   !create,
		ErrorIfExists:      create,
		MaxOpenFiles:       64,
		FormatMajorVersion: pebble.FormatDefault,
	}
	if create {
		o.FormatMajorVersion = storeFormat
	}
	// Pebble's default for DataCorruption is Logger.Fatalf. A read that
	// finds corruption returns an error as well, which reaches the caller
	// as a *StoreCorruptionError (WrapStoreError), so the event itself needs
	// no handling; background errors are not fatal either.
	o.EventListener = &pebble.EventListener{
		DataCorruption:  func(pebble.DataCorruptionInfo) {},
		BackgroundError: func(error) {},
	}
	return o
}

// OpenStore opens (or, with create, creates) the pebble store at path.
// Corruption is a *StoreCorruptionError.
func OpenStore(fs vfs.FS, path string, cache *pebble.Cache, readOnly, create bool) (_ *pebble.DB, err error) {
	return OpenStoreWith(path, StoreOptions(fs, cache, readOnly, create), create)
}

// OpenStoreWith is OpenStore with the options given.
func OpenStoreWith(path string, o *pebble.Options, create bool) (_ *pebble.DB, err error) {
	defer RecoverStoreFatal(path, &err)
	db, err := openPebble(path, o)
	if err != nil {
		if !create && errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("shard store %s is missing: the directory is incomplete; restore it from a backup: %w", path, err)
		}
		return nil, WrapStoreError(path, "opening", err)
	}
	return db, nil
}

// LoadShard reads a whole shard store into memory: the checkpoint header
// and the state it describes. It checks that the store agrees with itself:
// every run's records are all there, the derived ID index and timers match
// what the journals say, numbers are below the header's counters. A store
// whose files are corrupt is a *StoreCorruptionError, never a panic.
func LoadShard(db *pebble.DB, path string, index, count int) (_ *model.Shard, _ model.CheckpointHeader, err error) {
	defer RecoverStoreFatal(path, &err)
	s := model.NewShard(index, count)
	var hdr model.CheckpointHeader
	haveHeader := false
	storedIDs := map[string]model.RunNo{}
	storedTimers := map[model.TimerKey]struct{}{}
	var cur *model.Run // the run whose records follow
	var curWant uint32

	fail := func(key []byte, err error) error {
		ks := fmt.Sprintf("%q", key)
		if k, perr := ParseStoreKey(key); perr == nil {
			ks = k.String()
		}
		if key == nil {
			ks = ""
		}
		return &StoreError{Path: path, Key: ks, Err: err}
	}
	endRun := func() error {
		if cur != nil && uint32(len(cur.Journal)) != curWant {
			return fail(RunKey(cur.No), fmt.Errorf("the run entry says %d journal records, the store has %d", curWant, len(cur.Journal)))
		}
		cur = nil
		return nil
	}

	it, err := db.NewIter(nil)
	if err != nil {
		return nil, hdr, WrapStoreError(path, "reading", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		key, val := it.Key(), it.Value()
		k, err := ParseStoreKey(key)
		if err != nil {
			it.Close()
			return nil, hdr, fail(nil, err)
		}
		if k.Kind != KeyRun || !k.IsRecord {
			if err := endRun(); err != nil {
				it.Close()
				return nil, hdr, err
			}
		}
		if err := loadKey(s, k, val, &hdr, &haveHeader, storedIDs, storedTimers, &cur, &curWant); err != nil {
			it.Close()
			return nil, hdr, fail(key, err)
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, hdr, WrapStoreError(path, "reading", err)
	}
	if err := it.Close(); err != nil {
		return nil, hdr, WrapStoreError(path, "reading", err)
	}
	if err := endRun(); err != nil {
		return nil, hdr, err
	}
	if !haveHeader {
		return nil, hdr, fail(nil, errors.New("no checkpoint header (key \"H\")"))
	}
	if err := checkLoaded(s, &hdr, index, count, storedIDs, storedTimers); err != nil {
		return nil, hdr, fail(nil, err)
	}
	return s, hdr, nil
}

// loadKey adds one store key to the shard being loaded.
func loadKey(s *model.Shard, k StoreKey, val []byte, hdr *model.CheckpointHeader, haveHeader *bool,
	ids map[string]model.RunNo, timers map[model.TimerKey]struct{}, cur **model.Run, curWant *uint32) error {
	switch k.Kind {
	case KeyHeader:
		h, err := model.DecodeHeader(val)
		if err != nil {
			return err
		}
		*hdr, *haveHeader = h, true
	case KeyArchive:
		recs, err := model.DecodeHistory(val)
		if err != nil {
			return err
		}
		s.Archive[k.Run] = recs
	case KeyIndex:
		no, err := model.DecodeIndexValue(val)
		if err != nil {
			return err
		}
		ids[k.ID] = no
	case KeyOutbox:
		m, err := model.DecodeMessage(val, k.Seq)
		if err != nil {
			return err
		}
		if _, dup := s.Outbox[m.ID]; dup {
			return fmt.Errorf("message ID %q is in the outbox twice", m.ID)
		}
		s.Outbox[m.ID] = m
	case KeySeen:
		wf, err := model.DecodeSeenValue(val)
		if err != nil {
			return err
		}
		s.Seen[k.ID] = wf
	case KeyTimer:
		if len(val) != 0 {
			return fmt.Errorf("timer value of %d bytes, want none", len(val))
		}
		timers[model.TimerKey{At: k.At, Run: k.Run, Pos: k.Pos}] = struct{}{}
	case KeyRun:
		return LoadRunKey(s, k, val, cur, curWant)
	}
	return nil
}

// checkRunEntry checks what a stored run entry must say whatever the
// layout: a workflow ID, and records exactly when the run is no tombstone.
func checkRunEntry(e *model.RunEntry) error {
	if e.WorkflowID == "" {
		return errors.New("run entry without a workflow ID")
	}
	if (e.State == model.StateTombstone) != (e.Records == 0) {
		return fmt.Errorf("a %s run with %d journal records", e.State, e.Records)
	}
	return nil
}

func LoadRunKey(s *model.Shard, k StoreKey, val []byte, cur **model.Run, curWant *uint32) error {
	if k.Run == model.NoSuchRun {
		return fmt.Errorf("a run numbered %d, the number reserved for references to no run", model.NoSuchRun)
	}
	if !k.IsRecord {
		e, err := model.DecodeRunEntry(val)
		if err != nil {
			return err
		}
		if err := checkRunEntry(&e); err != nil {
			return err
		}
		r := model.RunOfEntry(k.Run, &e)
		if e.Records > 0 {
			r.Journal = make([]model.Record, 0, e.Records)
		}
		s.Runs[k.Run] = r
		*cur, *curWant = r, e.Records
		return nil
	}
	r := *cur
	if r == nil || r.No != k.Run {
		return errors.New("a journal record without its run entry")
	}
	if int(k.Pos) != len(r.Journal) || k.Pos >= *curWant {
		return fmt.Errorf("journal record at position %d, want position %d of %d", k.Pos, len(r.Journal), *curWant)
	}
	rec, err := model.DecodeRecord(val)
	if err != nil {
		return err
	}
	if rec.Pos != k.Pos {
		return fmt.Errorf("record says position %d", rec.Pos)
	}
	r.Journal = append(r.Journal, rec)
	return nil
}

// checkLoaded checks a loaded shard against its header and rebuilds the
// derived indexes, refusing a store whose stored copies differ.
func checkLoaded(s *model.Shard, hdr *model.CheckpointHeader, index, count int, ids map[string]model.RunNo, timers map[model.TimerKey]struct{}) error {
	if err := CheckHeader(hdr, index, count); err != nil {
		return err
	}
	s.LSN, s.NextRun, s.NextSeq, s.StoreGen = hdr.LSN, hdr.NextRun, hdr.NextSeq, hdr.Gen
	for no, r := range s.Runs {
		if no >= s.NextRun {
			return fmt.Errorf("run %d is not below the header's next run number %d", no, s.NextRun)
		}
		if r.State == model.StateTombstone {
			if _, ok := s.Archive[no]; !ok {
				return fmt.Errorf("tombstoned run %d has no archived history", no)
			}
		} else if st := r.Start(); st == nil || st.Kind != model.KindStart || st.WorkflowID != r.WorkflowID {
			return fmt.Errorf("run %d's journal does not begin with its start record", no)
		}
	}
	s.ByID = model.DeriveIndex(s.Runs)
	for no := range s.Archive {
		if r, ok := s.Runs[no]; !ok || r.State != model.StateTombstone {
			return fmt.Errorf("archived history of run %d, which is not a tombstone", no)
		}
	}
	for _, m := range s.Outbox {
		if m.Seq >= s.NextSeq {
			return fmt.Errorf("outbox message %d is not below the header's next seq %d", m.Seq, s.NextSeq)
		}
	}
	if !maps.Equal(ids, s.ByID) {
		return fmt.Errorf("the ID index (%d entries) differs from the runs' workflow IDs (%d highest generations): %s",
			len(ids), len(s.ByID), firstIDDiff(ids, s.ByID))
	}
	s.RebuildTimers()
	if !maps.Equal(timers, s.Timers) {
		return fmt.Errorf("the stored timers (%d) differ from the journals' pending timers (%d)", len(timers), len(s.Timers))
	}
	return nil
}

func firstIDDiff(stored, derived map[string]model.RunNo) string {
	ids := slices.Sorted(maps.Keys(stored))
	for id := range derived {
		if _, ok := stored[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a, aok := stored[id]
		b, bok := derived[id]
		if a != b || aok != bok {
			return fmt.Sprintf("workflow ID %q: index says run %d, its highest generation is run %d", id, a, b)
		}
	}
	return "?"
}

// WriteChanges adds to b every key the shard changed since its store last
// reflected it, then the new header. Committing b (synced) is the
// checkpoint. Keys go into the batch in a fixed order (by kind, then key),
// never in map order: the batch's bytes (pebble's WAL) and the sequence
// numbers its keys get (pebble's tables) then depend only on the state,
// so the same history writes the same store files. src is the store as
// it is before b: the histories of runs tombstoned while evicted
// (model.Changes.Stored) are read from it, record values copied as
// bytes, which gives the bytes EncodeHistory gives for them decoded.
func WriteChanges(b *pebble.Batch, src pebble.Reader, s *model.Shard, hdr *model.CheckpointHeader) error {
	return writeChanges(b, src, s, hdr, false)
}

// WriteBuildChanges is WriteChanges for a store in the build layout
// (buildlayout.go): each changed run is written whole, as one value, and
// a run tombstoned while evicted gets its archive from its stored value.
func WriteBuildChanges(b *pebble.Batch, src pebble.Reader, s *model.Shard, hdr *model.CheckpointHeader) error {
	return writeChanges(b, src, s, hdr, true)
}

func writeChanges(b *pebble.Batch, src pebble.Reader, s *model.Shard, hdr *model.CheckpointHeader, build bool) error {
	c := s.Changed
	if c == nil {
		return errors.New("shard has no change tracking")
	}
	buf, archived, err := writeRunChanges(b, src, s, build)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(c.IDs)) {
		var err error
		if no, ok := s.ByID[id]; ok {
			err = b.Set(IndexKey(id), model.EncodeRunNo(no), nil)
		} else {
			err = b.Delete(IndexKey(id), nil)
		}
		if err != nil {
			return err
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.Timers), model.CompareTimers) {
		var err error
		if _, ok := s.Timers[k]; ok {
			err = b.Set(TimerKeyBytes(k), nil, nil)
		} else {
			err = b.Delete(TimerKeyBytes(k), nil)
		}
		if err != nil {
			return err
		}
	}
	for _, seq := range slices.Sorted(maps.Keys(c.Outbox)) {
		id := c.Outbox[seq]
		var err error
		if m, ok := s.Outbox[id]; ok && m.Seq == seq {
			err = b.Set(OutboxKey(seq), model.EncodeMessage(buf[:0], m), nil)
		} else {
			err = b.Delete(OutboxKey(seq), nil)
		}
		if err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Seen)) {
		if err := b.Set(SeenKey(id), model.EncodeSeenValue(buf[:0], s.Seen[id]), nil); err != nil {
			return err
		}
	}
	var stored storedHistories
	defer stored.close()
	for _, no := range slices.Sorted(maps.Keys(c.Archive)) {
		if _, ok := archived[no]; ok {
			continue
		}
		var v []byte
		if n, ok := c.Stored[no]; ok {
			var err error
			if build {
				v, err = buildHistory(src, buf[:0], no, n)
			} else {
				v, err = stored.history(src, buf[:0], no, n)
			}
			if err != nil {
				return err
			}
		} else {
			v = model.EncodeHistory(buf[:0], s.Archive[no])
		}
		if err := b.Set(ArchiveKey(no), v, nil); err != nil {
			return err
		}
		buf = v
	}
	if err := stored.close(); err != nil {
		return err
	}
	return b.Set(headerKey, model.EncodeHeader(nil, hdr), nil)
}

// writeRunChanges adds the keys of s's changed runs to b, in run order;
// it returns its scratch buffer for the caller's reuse, and the runs
// whose archive it wrote. A run tombstoned while evicted whose entry was
// not read (model.Shard.Unread) gets it from src here, in run order; in
// the build layout that one read also gives the journal to archive, so
// the run's archive key is written here, after its run key, instead of
// with the other archives (still an order the state alone decides).
func writeRunChanges(b *pebble.Batch, src pebble.Reader, s *model.Shard, build bool) ([]byte, map[model.RunNo]struct{}, error) {
	var buf []byte
	var archived map[model.RunNo]struct{}
	c := s.Changed
	for _, no := range slices.Sorted(maps.Keys(c.Runs)) {
		r, ok := s.Runs[no]
		if !ok && s.Unread(no) && build {
			var err error
			if buf, err = tombstoneUnreadBuild(b, src, s, no, buf); err != nil {
				return buf, archived, fmt.Errorf("tombstoning run %d: %w", no, err)
			}
			if archived == nil {
				archived = map[model.RunNo]struct{}{}
			}
			archived[no] = struct{}{}
			continue
		}
		if !ok && s.Unread(no) {
			e, err := storedEntry(src, no)
			if err == nil {
				r, err = s.ResolveTombstone(no, &e)
			}
			if err != nil {
				return buf, archived, fmt.Errorf("tombstoning run %d: %w", no, err)
			}
			ok = true
		}
		if !ok {
			return buf, archived, fmt.Errorf("changed run %d is gone", no)
		}
		from := c.Runs[no]
		if build {
			buf = EncodeBuildRun(buf[:0], r)
			if err := b.Set(RunKey(no), buf, nil); err != nil {
				return buf, archived, err
			}
			continue
		}
		e := model.EntryOf(r)
		if err := b.Set(RunKey(no), model.EncodeRunEntry(buf[:0], &e), nil); err != nil {
			return buf, archived, err
		}
		if r.State == model.StateTombstone {
			// The store holds the records below from (the first position
			// changed since it last reflected the run): delete each. Point
			// deletions, not a range deletion: a range tombstone in a
			// table makes every later point read of that table load its
			// range-deletion block.
			for pos := range from {
				if err := b.Delete(RecordKey(no, pos), nil); err != nil {
					return buf, archived, err
				}
			}
			continue
		}
		for pos := int(from); pos < len(r.Journal); pos++ {
			buf = model.EncodeRecord(buf[:0], &r.Journal[pos])
			if err := b.Set(RecordKey(no, uint32(pos)), buf, nil); err != nil {
				return buf, archived, err
			}
		}
	}
	return buf, archived, nil
}

// storedEntry reads run no's entry from src, a store in the store
// layout.
func storedEntry(src pebble.Reader, no model.RunNo) (e model.RunEntry, err error) {
	if src == nil {
		return e, errors.New("no store to read its entry from")
	}
	found, err := withRunValue(src, no, func(v []byte) (err error) {
		e, err = model.DecodeRunEntry(v)
		return err
	})
	if err == nil && !found {
		err = errors.New("the store lacks it")
	}
	return e, err
}

// storedHistories builds the archived histories of the runs a shard
// tombstoned while they were evicted (model.Changes.Stored) from the
// journal records the store holds, copied as bytes, in one pass: one
// iterator for the whole checkpoint, seeking forward run by run in
// number order.
type storedHistories struct {
	it  *pebble.Iterator
	key []byte
}

// history appends to dst the archived history of run no, whose n journal
// records src holds.
func (h *storedHistories) history(src pebble.Reader, dst []byte, no model.RunNo, n uint32) ([]byte, error) {
	if src == nil {
		return nil, fmt.Errorf("archiving run %d: no store to read its %d journal records from", no, n)
	}
	if h.it == nil {
		it, err := src.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyRun}, UpperBound: []byte{KeyRun + 1}})
		if err != nil {
			return nil, err
		}
		h.it = it
	}
	dst = model.AppendHistoryLen(dst, int(n))
	h.key = AppendRecordKey(h.key[:0], no, 0)
	ok := h.it.SeekGE(h.key)
	for pos := range n {
		h.key = AppendRecordKey(h.key[:0], no, pos)
		if !ok || !bytes.Equal(h.it.Key(), h.key) {
			if err := h.it.Error(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("archiving run %d: the store lacks its journal record %s (the run entry says %d records)",
				no, StoreKey{Kind: KeyRun, Run: no, Pos: pos, IsRecord: true}, n)
		}
		dst = model.AppendHistoryRecord(dst, h.it.Value())
		ok = h.it.Next()
	}
	return dst, nil
}

// close closes the iterator (once; later calls return nil).
func (h *storedHistories) close() error {
	if h.it == nil {
		return nil
	}
	err := h.it.Close()
	h.it = nil
	return err
}

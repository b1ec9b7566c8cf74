package journal

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// Eviction: a DB whose engine asked for it (DB.SetEvict) keeps in memory
// only what changed since its last checkpoint and what was read since.
// Right after each checkpoint, when every store holds its shard's whole
// state, it drops each shard's runs, ID index, receiver dedup set,
// archived histories and timers from memory; the shard then reads a run,
// an index entry or a dedup entry back from its store by key the first
// time it is needed (Shard.Run, Shard.LatestNo, Shard.SeenBy), as an
// engine with a run store does. The outbox (messages in flight) stays in
// memory. Change tracking is untouched: whatever Apply changes is in
// memory until the next checkpoint writes it, so a checkpoint never needs
// anything that was evicted.

// backing is where an evicting shard reads what it dropped.
type backing struct {
	st      *pebble.DB
	path    string
	scratch *model.Shard // for LoadRunKey, which files the run it decodes
	// ids and seen hold every workflow ID and message ID the store or
	// memory may have in the ID index and the dedup set (keyfilter.go).
	ids, seen *keyFilter
	// build: the store is in the build layout (store/buildlayout.go): a
	// run is one value under its entry key.
	build bool
}

// ReadIndex reads the ID index entry of workflowID (model.Backing).
func (b *backing) ReadIndex(workflowID string) (model.RunNo, bool, error) {
	if !b.ids.mayHave(workflowID) {
		return 0, false, nil
	}
	val, err := b.getErr(store.IndexKey(workflowID))
	if err != nil || val == nil {
		return 0, false, err
	}
	no, err := model.DecodeIndexValue(val)
	if err != nil {
		return 0, false, &store.StoreError{Path: b.path, Key: store.StoreKey{Kind: store.KeyIndex, ID: workflowID}.String(), Err: err}
	}
	return no, true, nil
}

// ReadSeen reads the receiver dedup entry of msgID (model.Backing).
func (b *backing) ReadSeen(msgID string) (string, bool, error) {
	if !b.seen.mayHave(msgID) {
		return "", false, nil
	}
	val, err := b.getErr(store.SeenKey(msgID))
	if err != nil || val == nil {
		return "", false, err
	}
	wf, err := model.DecodeSeenValue(val)
	if err != nil {
		return "", false, &store.StoreError{Path: b.path, Key: store.StoreKey{Kind: store.KeySeen, ID: msgID}.String(), Err: err}
	}
	return wf, true, nil
}

// AddID notes a workflow ID put in the ID index (model.Backing).
func (b *backing) AddID(workflowID string) { b.ids.add(workflowID) }

// AddSeen notes a message ID put in the dedup set (model.Backing).
func (b *backing) AddSeen(msgID string) { b.seen.add(msgID) }

// getErr reads one key's value (a copy; nil: absent).
func (b *backing) getErr(key []byte) (val []byte, err error) {
	_, err = b.getWith(key, func(v []byte) error {
		val = append(make([]byte, 0, len(v)+1), v...) // never nil: present
		return nil
	})
	return val, err
}

// getWith calls fn with one key's value as the store holds it, valid
// only during the call (absent: fn is not called, found is false).
func (b *backing) getWith(key []byte, fn func(v []byte) error) (found bool, err error) {
	defer store.RecoverStoreFatal(b.path, &err)
	v, closer, err := b.st.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, store.WrapStoreError(b.path, "reading", err)
	}
	err = fn(v)
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	return true, err
}

// ReadEntry reads run no's entry alone (model.Backing).
func (b *backing) ReadEntry(no model.RunNo) (model.RunEntry, bool, error) {
	if b.build {
		return b.readBuildEntry(no)
	}
	val, err := b.getErr(store.RunKey(no))
	if err != nil || val == nil {
		return model.RunEntry{}, false, err
	}
	e, err := model.DecodeRunEntry(val)
	if err != nil {
		return e, false, &store.StoreError{Path: b.path, Key: store.StoreKey{Kind: store.KeyRun, Run: no}.String(), Err: err}
	}
	return e, true, nil
}

// readBuildEntry is ReadEntry of a store in the build layout: the entry
// at the front of the run's value.
func (b *backing) readBuildEntry(no model.RunNo) (e model.RunEntry, found bool, err error) {
	found, err = b.getWith(store.RunKey(no), func(v []byte) error {
		var derr error
		if _, e, _, derr = store.SplitBuildRun(v); derr != nil {
			return b.runError(no, derr)
		}
		return nil
	})
	return e, found && err == nil, err
}

// readBuildRun is ReadRun of a store in the build layout: one point read.
func (b *backing) readBuildRun(no model.RunNo) (r *model.Run, err error) {
	_, err = b.getWith(store.RunKey(no), func(v []byte) error {
		var derr error
		if r, derr = store.DecodeBuildRun(no, v); derr != nil {
			return b.runError(no, derr)
		}
		return nil
	})
	return r, err
}

// runError is a StoreError naming run no's key.
func (b *backing) runError(no model.RunNo, err error) error {
	return &store.StoreError{Path: b.path, Key: store.StoreKey{Kind: store.KeyRun, Run: no}.String(), Err: err}
}

// ReadRun reads run no and its journal from the store (nil: none).
func (b *backing) ReadRun(no model.RunNo) (r *model.Run, err error) {
	if b.build {
		return b.readBuildRun(no)
	}
	defer store.RecoverStoreFatal(b.path, &err)
	it, err := b.st.NewIter(&pebble.IterOptions{LowerBound: store.RunKey(no), UpperBound: store.RunKey(no + 1)})
	if err != nil {
		return nil, store.WrapStoreError(b.path, "reading", err)
	}
	var want uint32
	for ok := it.First(); ok; ok = it.Next() {
		k, perr := store.ParseStoreKey(it.Key())
		if perr == nil {
			perr = store.LoadRunKey(b.scratch, k, it.Value(), &r, &want)
		}
		if perr != nil {
			return nil, store.CloseIter(b.path, it, &store.StoreError{Path: b.path, Key: fmt.Sprintf("%q", it.Key()), Err: perr})
		}
	}
	if err := it.Error(); err != nil {
		return nil, store.CloseIter(b.path, it, store.WrapStoreError(b.path, "reading", err))
	}
	if err := store.CloseIter(b.path, it, nil); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, nil
	}
	delete(b.scratch.Runs, no)
	if uint32(len(r.Journal)) != want {
		return nil, &store.StoreError{Path: b.path, Key: store.StoreKey{Kind: store.KeyRun, Run: no}.String(),
			Err: fmt.Errorf("the run entry says %d journal records, the store has %d", want, len(r.Journal))}
	}
	return r, nil
}

// SetEvict turns eviction on (see above): from now on each Checkpoint
// ends by dropping from memory what the stores hold. An engine turns it
// on once it has derived what it needs from the whole state (its pending
// events); tools that read the whole state (verify, dump, reshard) never
// do.
func (db *DB) SetEvict() { db.SetEvictKeep(0) }

// SetEvictKeep is SetEvict that keeps up to keep running runs in memory
// across each checkpoint (spread over the shards): the ones an engine is
// about to touch again.
func (db *DB) SetEvictKeep(keep int) {
	db.evictKeep = keep / len(db.Shards)
	for i, s := range db.Shards {
		if s.Backing() == nil {
			b := &backing{st: db.stores[i], path: store.StoreDir(db.FS, db.Dir, i), scratch: model.NewShard(i, len(db.Shards)),
				ids: newKeyFilter(), seen: newKeyFilter(), build: db.build}
			for id := range s.ByID {
				b.ids.add(id)
			}
			for id := range s.Seen {
				b.seen.add(id)
			}
			s.SetBacking(b)
		}
	}
	db.evict = true
}

// Resident is how many runs the DB holds in memory.
func (db *DB) Resident() int {
	n := 0
	for _, s := range db.Shards {
		n += s.Resident()
	}
	return n
}

// loadErr is the first eviction read error of any shard.
func (db *DB) loadErr() error {
	for _, s := range db.Shards {
		if err := s.LoadErr(); err != nil {
			return fmt.Errorf("shard %d: reading evicted state back: %w; close and reopen the directory", s.Index, err)
		}
	}
	return nil
}

// StoredRuns calls fn for every run the store of shard i holds, in run
// number order, with its journal. Right after a checkpoint that is the
// shard's every run; fn must not keep r if memory is to stay bounded.
func (db *DB) StoredRuns(i int, fn func(r *model.Run) error) (err error) {
	path := store.StoreDir(db.FS, db.Dir, i)
	defer store.RecoverStoreFatal(path, &err)
	if db.build {
		return db.storedBuildRuns(i, path, fn)
	}
	it, err := db.stores[i].NewIter(&pebble.IterOptions{LowerBound: []byte{store.KeyRun}, UpperBound: []byte{store.KeyRun + 1}})
	if err != nil {
		return store.WrapStoreError(path, "reading", err)
	}
	scratch := model.NewShard(i, len(db.Shards))
	var cur *model.Run
	var want uint32
	emit := func() error {
		if cur == nil {
			return nil
		}
		r := cur
		cur = nil
		delete(scratch.Runs, r.No)
		if uint32(len(r.Journal)) != want {
			return &store.StoreError{Path: path, Key: store.StoreKey{Kind: store.KeyRun, Run: r.No}.String(),
				Err: fmt.Errorf("the run entry says %d journal records, the store has %d", want, len(r.Journal))}
		}
		return fn(r)
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, perr := store.ParseStoreKey(it.Key())
		if perr != nil {
			return store.CloseIter(path, it, &store.StoreError{Path: path, Key: fmt.Sprintf("%q", it.Key()), Err: perr})
		}
		if !k.IsRecord {
			if err := emit(); err != nil {
				return store.CloseIter(path, it, err)
			}
		}
		if perr := store.LoadRunKey(scratch, k, it.Value(), &cur, &want); perr != nil {
			return store.CloseIter(path, it, &store.StoreError{Path: path, Key: k.String(), Err: perr})
		}
	}
	if err := it.Error(); err != nil {
		return store.CloseIter(path, it, store.WrapStoreError(path, "reading", err))
	}
	if err := emit(); err != nil {
		return store.CloseIter(path, it, err)
	}
	return store.CloseIter(path, it, nil)
}

// storedBuildRuns is StoredRuns of a store in the build layout.
func (db *DB) storedBuildRuns(i int, path string, fn func(r *model.Run) error) error {
	it, err := db.stores[i].NewIter(&pebble.IterOptions{LowerBound: []byte{store.KeyRun}, UpperBound: []byte{store.KeyRun + 1}})
	if err != nil {
		return store.WrapStoreError(path, "reading", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, err := store.ParseStoreKey(it.Key())
		if err == nil && k.IsRecord {
			err = errors.New("a record key in a build-layout store")
		}
		var r *model.Run
		if err == nil {
			r, err = store.DecodeBuildRun(k.Run, it.Value())
		}
		if err != nil {
			return store.CloseIter(path, it, &store.StoreError{Path: path, Key: fmt.Sprintf("%q", it.Key()), Err: err})
		}
		if err := fn(r); err != nil {
			return store.CloseIter(path, it, err)
		}
	}
	if err := it.Error(); err != nil {
		return store.CloseIter(path, it, store.WrapStoreError(path, "reading", err))
	}
	return store.CloseIter(path, it, nil)
}

package journal

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// An evicting recovery (OpenOptions.Evict) opens a directory for an
// engine that keeps only the runs it works on in memory: it loads each
// shard's checkpoint header and outbox (messages in flight stay in memory
// under eviction) and fills the shard's key filters from its ID index and
// dedup keys, but no run, archive or timer; the log tail is replayed onto
// that, reading each run an entry needs back from the store (evict.go).
// The DB then evicts at every checkpoint. Memory is that of the outbox
// and the filters, not of the runs. The store's self-consistency checks
// that need every run at once (the ID index and timers against the
// journals) are left to fusee verify.

// loadShardEvicting is LoadShard for an evicting recovery.
func loadShardEvicting(st *pebble.DB, path string, index, count int) (_ *model.Shard, _ model.CheckpointHeader, err error) {
	defer store.RecoverStoreFatal(path, &err)
	s := model.NewShard(index, count)
	b := &backing{st: st, path: path, scratch: model.NewShard(index, count), ids: newKeyFilter(), seen: newKeyFilter()}
	s.SetBacking(b)
	var hdr model.CheckpointHeader
	have := false
	each := func(kind byte, fn func(k store.StoreKey, val []byte) error) error {
		it, err := st.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
		if err != nil {
			return store.WrapStoreError(path, "reading", err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			k, perr := store.ParseStoreKey(it.Key())
			if perr == nil {
				perr = fn(k, it.Value())
			}
			if perr != nil {
				return store.CloseIter(path, it, &store.StoreError{Path: path, Key: fmt.Sprintf("%q", it.Key()), Err: perr})
			}
		}
		if err := it.Error(); err != nil {
			return store.CloseIter(path, it, store.WrapStoreError(path, "reading", err))
		}
		return store.CloseIter(path, it, nil)
	}
	err = errors.Join(
		each(store.KeyHeader, func(_ store.StoreKey, val []byte) (err error) {
			hdr, err = model.DecodeHeader(val)
			have = err == nil
			return err
		}),
		each(store.KeyOutbox, func(k store.StoreKey, val []byte) error {
			m, err := model.DecodeMessage(val, k.Seq)
			if err == nil {
				s.Outbox[m.ID] = m
			}
			return err
		}),
		each(store.KeyIndex, func(k store.StoreKey, _ []byte) error { b.ids.add(k.ID); return nil }),
		each(store.KeySeen, func(k store.StoreKey, _ []byte) error { b.seen.add(k.ID); return nil }),
	)
	if err != nil {
		return nil, hdr, err
	}
	if !have {
		return nil, hdr, &store.StoreError{Path: path, Err: errors.New("no checkpoint header (key \"H\")")}
	}
	if err := store.CheckHeader(&hdr, index, count); err != nil {
		return nil, hdr, &store.StoreError{Path: path, Err: err}
	}
	s.LSN, s.NextRun, s.NextSeq, s.StoreGen = hdr.LSN, hdr.NextRun, hdr.NextSeq, hdr.Gen
	return s, hdr, nil
}

// rebindBacking points each evicting shard at the DB's current store
// handles (after recovery reopened them for writing).
func (db *DB) rebindBacking() {
	for i, s := range db.Shards {
		if b, ok := s.Backing().(*backing); ok {
			b.st = db.stores[i]
		}
	}
}

// EachRun calls fn for every run of shard i as the DB sees it: runs in
// memory as they are there (an evicting DB's memory is ahead of its store
// for what changed since the checkpoint), the others read from the store
// one at a time (fn must not keep them if memory is to stay bounded).
// Order: the store's runs by number, then runs only in memory.
func (db *DB) EachRun(i int, fn func(r *model.Run) error) error {
	if err := db.checkShard(i); err != nil {
		return err
	}
	s := db.Shards[i]
	if !db.evict {
		for _, r := range s.SortedRuns() {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	inStore := map[model.RunNo]bool{}
	err := db.StoredRuns(i, func(r *model.Run) error {
		if s.Unread(r.No) {
			// Tombstoned since the checkpoint without reading its entry:
			// read it now, so that fn sees the run tombstoned.
			s.Run(r.No)
		}
		if m, ok := s.Runs[r.No]; ok {
			inStore[r.No] = true
			r = m
		}
		return fn(r)
	})
	if err != nil {
		return err
	}
	for _, r := range s.SortedRuns() {
		if !inStore[r.No] {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// DropUnchanged drops from an evicting DB's memory the runs (and ID index
// entries) read back from the stores that nothing changed since: what an
// engine reads while it rebuilds its pending events after an evicting
// recovery, which would otherwise stay until the next checkpoint.
func (db *DB) DropUnchanged() {
	if !db.evict {
		return
	}
	for _, s := range db.Shards {
		for no := range s.Runs {
			if _, ok := s.Changed.Runs[no]; !ok {
				delete(s.Runs, no)
			}
		}
		for id, no := range s.ByID {
			_, resident := s.Runs[no]
			if _, changed := s.Changed.IDs[id]; !resident && !changed {
				delete(s.ByID, id)
			}
		}
	}
}

package store

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// SpillMap is a key-value map that stays in memory while it is small and
// moves to a scratch pebble store once it holds more than its budget.
// Reshard's renumbering plan, run map and external sort of new store keys
// live in one, and so do verify's and dump's joins and sorts (journal/check),
// so their memory is bounded by a budget, never by the number of runs.
// Iteration is in key order either way. A SpillMap is not safe for
// concurrent use.
type SpillMap struct {
	fs     vfs.FS
	dir    string // where the scratch store goes if it spills
	budget int64

	mem      map[string][]byte
	memBytes int64

	db    *ScratchStore
	batch *pebble.Batch
}

// entryOverhead approximates what an in-memory entry costs beyond its
// key and value bytes: the map's slot, the key's string header, the
// value's slice header and the allocator's rounding.
const entryOverhead = 128

// NewSpillMap makes an empty map that spills into a scratch store at dir
// (created then, removed by Close) once it holds more than budget bytes.
func NewSpillMap(fs vfs.FS, dir string, budget int64) *SpillMap {
	return &SpillMap{fs: fs, dir: dir, budget: budget, mem: map[string][]byte{}}
}

// Spilled reports whether the map lives in a scratch store.
func (m *SpillMap) Spilled() bool { return m.db != nil }

// Put sets key to value (both copied).
func (m *SpillMap) Put(key, value []byte) error {
	if m.db != nil {
		if err := m.batch.Set(key, value, nil); err != nil {
			return err
		}
		if m.batch.Len() >= m.batchBytes() {
			return m.commit()
		}
		return nil
	}
	old, had := m.mem[string(key)]
	if had {
		m.memBytes -= int64(len(old))
	} else {
		m.memBytes += int64(len(key)) + entryOverhead
	}
	m.mem[string(key)] = bytes.Clone(value)
	m.memBytes += int64(len(value))
	if m.memBytes > m.budget {
		return m.spill()
	}
	return nil
}

// batchBytes is how large a batch of a spilled map grows before it is
// committed: a quarter of the map's share, between 64 KiB and 4 MiB, so
// that a small budget is not exceeded by the batch alone.
func (m *SpillMap) batchBytes() int { return int(min(max(m.budget/4, 64<<10), 4<<20)) }

// spill moves the in-memory entries to a new scratch store.
func (m *SpillMap) spill() error {
	// Pebble may hold two memtables while one flushes: keep both within
	// this map's share.
	memtable := int(min(max(m.budget/4, 1<<20), 16<<20))
	// The block cache gets the other half of the share: the run map is
	// read by point lookups, which without it read index blocks from the
	// file every time.
	cache := int(min(max(m.budget/2, 1<<20), 64<<20))
	db, err := OpenScratchStore(m.fs, m.dir, memtable, cache)
	if err != nil {
		return err
	}
	m.db, m.batch = db, db.NewBatch()
	for _, k := range slices.Sorted(maps.Keys(m.mem)) {
		if err := m.batch.Set([]byte(k), m.mem[k], nil); err != nil {
			return err
		}
		if m.batch.Len() >= m.batchBytes() {
			if err := m.commit(); err != nil {
				return err
			}
		}
	}
	m.mem, m.memBytes = nil, 0
	return m.commit()
}

func (m *SpillMap) commit() error {
	if m.batch.Empty() {
		return nil
	}
	if err := m.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("scratch store %s: %w", m.dir, err)
	}
	if err := m.db.Failed(); err != nil {
		return err
	}
	m.batch = m.db.NewBatch()
	return nil
}

// Settle commits what Put buffered. After it, until the next Put, Get and
// Each may be called from several goroutines at once.
func (m *SpillMap) Settle() error {
	if m.db == nil {
		return nil
	}
	return m.commit()
}

// Get returns the value of key; the slice is valid until the next call.
func (m *SpillMap) Get(key []byte) ([]byte, bool, error) {
	if m.db == nil {
		v, ok := m.mem[string(key)]
		return v, ok, nil
	}
	if err := m.commit(); err != nil {
		return nil, false, err
	}
	v, closer, err := m.db.Get(key)
	if ferr := m.db.Failed(); ferr != nil {
		if err == nil {
			closer.Close()
		}
		return nil, false, ferr
	}
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("scratch store %s: %w", m.dir, err)
	}
	out := bytes.Clone(v)
	closer.Close()
	return out, true, nil
}

// Each calls fn with every entry whose key starts with prefix, in key
// order. Key and value are valid only during the call.
func (m *SpillMap) Each(prefix []byte, fn func(k, v []byte) error) error {
	if m.db == nil {
		var keys []string
		for k := range m.mem {
			if strings.HasPrefix(k, string(prefix)) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := fn([]byte(k), m.mem[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := m.commit(); err != nil {
		return err
	}
	opts := &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
	it, err := m.db.NewIter(opts)
	if err != nil {
		return fmt.Errorf("scratch store %s: %w", m.dir, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("scratch store %s: %w", m.dir, err)
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("scratch store %s: %w", m.dir, err)
	}
	if err := m.db.Failed(); err != nil {
		return err
	}
	return nil
}

// Close drops the map and deletes its scratch store.
func (m *SpillMap) Close() error {
	m.mem = nil
	if m.db == nil {
		return nil
	}
	_ = m.batch.Close()
	err := m.db.Close()
	if ferr := m.db.Failed(); ferr != nil {
		err = ferr
	}
	m.db = nil
	if rerr := m.fs.RemoveAll(m.dir); err == nil {
		err = rerr
	}
	return err
}

// prefixEnd is the smallest key above every key with prefix (nil: none).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

package store

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
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

	// A spilled map is a sequence of runs in one scratch store, each
	// under its own 4-byte prefix (the run number, big-endian), so that
	// no flushed table of one run overlaps another's. Puts go into the
	// newest run; once it holds about sealTables memtables' worth, it is
	// sealed: compacted (in the background) into one level of tables that
	// overlap nothing, and the next run begins. So level 0 never holds
	// more than about two runs' tables, and reading the map merges one
	// table per sealed run, not every table ever flushed (pebble's level
	// 0 bookkeeping grows with the square of its table count, and a read
	// holds every overlapping table open). A key Put again in a later run
	// shadows the earlier runs' value.
	db       *ScratchStore
	batch    *pebble.Batch
	run      uint32     // the run Puts go into
	runBytes int64      // bytes committed into it
	sealAt   int64      // runBytes that seal a run: sealTables memtables
	sealing  chan error // the running compaction of the previous run, if any
	key      []byte     // a key with its run prefix (Put, Get)
}

// sealTables is how many memtables' worth of data a run of a spilled map
// holds before it is sealed (see SpillMap).
const sealTables = 32

// entryOverhead approximates what an in-memory entry costs beyond its
// key and value bytes: the map's slot, the key's string header, the
// value's slice header and the allocator's rounding.
const entryOverhead = 128

// NewSpillMap makes an empty map that spills into a scratch store at dir
// (created then, removed by Close) once it holds more than budget bytes.
func NewSpillMap(fs vfs.FS, dir string, budget int64) *SpillMap {
	m := &SpillMap{fs: fs, dir: dir, budget: budget, mem: map[string][]byte{}}
	m.sealAt = sealTables * int64(m.memtableBytes())
	return m
}

// Spilled reports whether the map lives in a scratch store.
func (m *SpillMap) Spilled() bool { return m.db != nil }

// Put sets key to value (both copied).
func (m *SpillMap) Put(key, value []byte) error {
	if m.db != nil {
		if err := m.batch.Set(m.runKey(m.run, key), value, nil); err != nil {
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

// runKey is key under the prefix of run (valid until the next call).
func (m *SpillMap) runKey(run uint32, key []byte) []byte {
	m.key = append(binary.BigEndian.AppendUint32(m.key[:0], run), key...)
	return m.key
}

// memtableBytes is the scratch store's memtable size. Pebble may hold
// two memtables while one flushes: keep both within this map's share.
func (m *SpillMap) memtableBytes() int { return int(min(max(m.budget/4, 1<<20), 16<<20)) }

// batchBytes is how large a batch of a spilled map grows before it is
// committed: a quarter of a memtable, at least 64 KiB, so that a small
// budget is not exceeded by the batch alone, and pebble does not turn the
// batch into a table of its own (it does so with a batch of half a
// memtable or more, which would make a table per commit).
func (m *SpillMap) batchBytes() int {
	return int(min(int64(max(m.memtableBytes()/4, 64<<10)), max(m.sealAt, 1)))
}

// SealEvery makes the map seal a run every n bytes it commits (and commit
// a batch at least that often) instead of every sealTables memtables: a
// test's way to make many runs out of little data.
func (m *SpillMap) SealEvery(n int64) { m.sealAt = n }

// spill moves the in-memory entries to a new scratch store.
func (m *SpillMap) spill() error {
	memtable := m.memtableBytes()
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
		if err := m.batch.Set(m.runKey(m.run, []byte(k)), m.mem[k], nil); err != nil {
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
	n := int64(m.batch.Len())
	if err := m.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("scratch store %s: %w", m.dir, err)
	}
	if err := m.db.Failed(); err != nil {
		return err
	}
	m.batch = m.db.NewBatch()
	if m.runBytes += n; m.runBytes >= m.sealAt {
		return m.seal()
	}
	return nil
}

// seal starts compacting the current run (see SpillMap), once the
// previous one's compaction is done, and begins the next run.
func (m *SpillMap) seal() error {
	if err := m.sealed(); err != nil {
		return err
	}
	lo := binary.BigEndian.AppendUint32(nil, m.run)
	hi := binary.BigEndian.AppendUint32(nil, m.run+1)
	done, db := make(chan error, 1), m.db
	go func() { done <- db.Compact(context.Background(), lo, hi, false) }()
	m.sealing = done
	m.run++
	m.runBytes = 0
	return nil
}

// sealed waits for the running compaction of a sealed run, if any.
func (m *SpillMap) sealed() error {
	if m.sealing == nil {
		return nil
	}
	err := <-m.sealing
	m.sealing = nil
	if ferr := m.db.Failed(); ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("scratch store %s: compacting: %w", m.dir, err)
	}
	return nil
}

// Settle commits what Put buffered and waits for a sealed run's
// compaction. After it, until the next Put, Get and Each may be called
// from several goroutines at once.
func (m *SpillMap) Settle() error {
	if m.db == nil {
		return nil
	}
	if err := m.commit(); err != nil {
		return err
	}
	return m.sealed()
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
	// The newest run that holds key has its value. (Gets may run at
	// once after Settle: the prefixed key is the call's own.)
	k := make([]byte, 4+len(key))
	copy(k[4:], key)
	for run := int64(m.run); run >= 0; run-- {
		binary.BigEndian.PutUint32(k, uint32(run))
		v, closer, err := m.db.Get(k)
		if ferr := m.db.Failed(); ferr != nil {
			if err == nil {
				closer.Close()
			}
			return nil, false, ferr
		}
		if err == pebble.ErrNotFound {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("scratch store %s: %w", m.dir, err)
		}
		out := bytes.Clone(v)
		closer.Close()
		return out, true, nil
	}
	return nil, false, nil
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
	if err := m.sealed(); err != nil {
		return err
	}
	its := make(runIters, 0, m.run+1)
	defer func() {
		for _, r := range its {
			_ = r.it.Close()
		}
	}()
	for run := range m.run + 1 {
		lo := append(binary.BigEndian.AppendUint32(nil, run), prefix...)
		hi := prefixEnd(lo)
		if end := prefixEnd(prefix); end != nil {
			hi = append(binary.BigEndian.AppendUint32(nil, run), end...)
		}
		it, err := m.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return fmt.Errorf("scratch store %s: %w", m.dir, err)
		}
		r := &runIter{it: it, run: run}
		if it.First() {
			its = append(its, r)
		} else if err := it.Close(); err != nil {
			return fmt.Errorf("scratch store %s: %w", m.dir, err)
		}
	}
	heap.Init(&its)
	var cur []byte
	for len(its) > 0 {
		top := its[0]
		k := top.it.Key()[4:]
		v, err := top.it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("scratch store %s: %w", m.dir, err)
		}
		if err := fn(k, v); err != nil {
			return err
		}
		// Step past k in every run that holds it: the newest run's value
		// was the one passed.
		cur = append(cur[:0], k...)
		for len(its) > 0 && bytes.Equal(its[0].it.Key()[4:], cur) {
			if its[0].it.Next() {
				heap.Fix(&its, 0)
				continue
			}
			r := heap.Pop(&its).(*runIter)
			if err := r.it.Close(); err != nil {
				return fmt.Errorf("scratch store %s: %w", m.dir, err)
			}
		}
	}
	return m.db.Failed()
}

// runIter iterates over one run of a spilled map (see Each).
type runIter struct {
	it  *pebble.Iterator
	run uint32
}

// runIters is a heap of run iterators: the smallest key first, and of
// equal keys the newest run's.
type runIters []*runIter

func (h runIters) Len() int { return len(h) }
func (h runIters) Less(i, j int) bool {
	if c := bytes.Compare(h[i].it.Key()[4:], h[j].it.Key()[4:]); c != 0 {
		return c < 0
	}
	return h[i].run > h[j].run
}
func (h runIters) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runIters) Push(x any)   { *h = append(*h, x.(*runIter)) }
func (h *runIters) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// Close drops the map and deletes its scratch store.
func (m *SpillMap) Close() error {
	m.mem = nil
	if m.db == nil {
		return nil
	}
	_ = m.batch.Close()
	err := m.sealed()
	if cerr := m.db.Close(); err == nil {
		err = cerr
	}
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

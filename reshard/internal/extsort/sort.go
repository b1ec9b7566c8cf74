// Package extsort sorts the new stores' keys by shard and key within a
// memory budget (docs/reshard.md §5, pass 2): whole runs are items, an
// arena in memory spills to sorted scratch chunks that are merged per
// shard. It also holds the typed binary min-heap that the k-way merges
// (its own and the run map's) share.
//
// It owns only scratch files under the directory it is given and must
// never read or write anything else: it knows nothing of shards' stores,
// the plan or the switch.
package extsort

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// The sort of new store keys (docs/reshard.md §5, pass 2) for a shrink or
// an odd change, by whole runs rather than by keys. A run's keys reach the
// sorter together and in order (its entry, then its records: one kind,
// 'R', ascending), so they are kept as one item, sorted by its first key:
// a new store then takes the items of its shard in key order and each
// kind's keys come ascending, which is all store.StoreWriter asks. Every
// other key (archive, outbox, dedup, index, timer, header) is an item of
// its own. Items are appended to an arena in memory; when the arena
// outgrows the sorter's share of the budget, its items are sorted and
// written as a "chunk", a scratch file per shard (its sections),
// sequentially and without a sync (scratch files are deleted before the
// switch), and the arena starts again. Each new store is then written
// from the arena (nothing spilled) or from a merge of every chunk's
// section for its shard, and those sections are removed once merged. Sorting a
// million runs' items instead of tens of millions of keys, and merging
// flat files instead of going through a scratch pebble store, is what
// makes this cheaper than the spill map it replaced here.

// sortItem is one item in the arena: its pairs are arena[off:end], each
// a uvarint key length, the key, a uvarint value length and the value;
// its key (the first pair's) is arena[keyOff:keyOff+keyLen].
type sortItem struct {
	p1, p2         uint64 // the key's first 16 bytes, big-endian, zero-padded: most comparisons end here
	off, end       uint32
	keyOff, keyLen uint32
	next           uint32 // an in-order item's: the next of its group, as an index in seq plus one (0: none)
	shard          uint16
}

// sortItemBytes is what an item costs beyond its pairs' bytes.
const sortItemBytes = 40

// keyPrefix is key's first 16 bytes as two big-endian numbers, zero-padded.
func keyPrefix(key []byte) (uint64, uint64) {
	var b [16]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// maxArena bounds the arena (its offsets are 32-bit); the budget is
// clamped well below it.
const maxArena = 1<<32 - 1

// minChunk is the smallest arena that goes to a chunk, so that a tiny
// budget makes few, not countless, files.
const minChunk = 64 << 10

// chunk is a sorted run of items in scratch files, one per shard it has
// items of (its sections): shard j's are the file section(n, j), of
// sizes[j] bytes (none when 0). A shard's sections are removed as soon
// as they are merged (Each), so that the scratch space shrinks as the
// new stores grow.
type chunk struct {
	n     int
	sizes []int64
}

// section is the path of chunk n's section of shard j.
func (s *Sorter) section(n, j int) string {
	return s.fs.PathJoin(s.dir, fmt.Sprintf("chunk-%06d-%04d", n, j))
}

// Sorter sorts the new stores' keys by shard and key. Its Writers take
// the keys, each from a goroutine of its own (a rewrite worker); after
// Settle, Each may run on several goroutines at once. What Each gives
// does not depend on how the keys were spread over the writers or
// spilled: every key of a shard is distinct, and they come in key order.
type Sorter struct {
	fs     vfs.FS
	dir    string
	budget int64
	shards int
	// mergers is how many shards' merges may run at once: they share
	// the budget's read buffers.
	mergers int
	writers []*Writer
	mu      sync.Mutex // guards chunks and made, which the writers' flushes add to
	chunks  []chunk
	made    int // chunk files created
	// merged, when set, is called once shard j's sections are merged,
	// before they are removed (a test measures the scratch space there).
	merged func(j int)
}

// OnMerged sets a function called once each shard's sections are
// merged, just before they are removed: where the scratch space and the
// new stores together are at their largest.
func (s *Sorter) OnMerged(fn func(j int)) { s.merged = fn }

// A Writer is one goroutine's way into a Sorter: its arena, within its
// share of the budget, spills to chunks of the sorter's.
type Writer struct {
	s      *Sorter
	budget int64
	arena  []byte
	items  []sortItem // to be sorted
	// seq are the in-order items (inorder.go), in groups that are
	// ascending each; open is, by shard and key kind, the group being
	// extended plus one (0: none).
	seq     []sortItem
	groups  []group
	open    []int32
	lastSeq bool // the last item put is seq's, not items'
	// Once sorted (settle): shard j's items are items[starts[j]:starts[j+1]]
	// and its groups groups[gstarts[j]:gstarts[j+1]].
	starts, gstarts []int
	bw              *bufio.Writer // a chunk's sections' writer, reused
}

// New is an empty sorter for shards new shards whose chunks go under dir,
// its arenas within budget; mergers shards' Each may run at once.
func New(fs vfs.FS, dir string, shards int, budget int64, mergers int) *Sorter {
	return &Sorter{fs: fs, dir: dir, shards: shards, budget: min(max(budget, minChunk), 1<<30), mergers: max(mergers, 1)}
}

// Writers makes n writers (at least one), which share the budget (more
// writers, not more memory); it is called once, before any Put.
func (s *Sorter) Writers(n int) []*Writer {
	n = max(n, 1)
	s.writers = make([]*Writer, n)
	for k := range s.writers {
		s.writers[k] = &Writer{s: s, budget: s.budget / int64(n)}
	}
	return s.writers
}

// Spilled reports whether chunks went to scratch files.
func (s *Sorter) Spilled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.chunks) > 0
}

// Put adds key and value (copied) to new shard j's keys, to be sorted:
// to the last item when it is the same run's ('R' keys of one run
// number, one after the other), else as a new item.
func (s *Writer) Put(j int, key, value []byte) error { return s.put(j, key, value, false) }

// PutInOrder is Put for a key that needs no sort: the caller puts the
// keys of a stream (say a run that keeps its number, or an outbox
// message, as an old shard gives them) for shard j in ascending order
// within their kind. They are kept in ascending groups, merged with the
// sorted items as they are written (inorder.go); a key that is not
// above the last of its stream starts a new group, so the order is
// checked, never taken on trust.
func (s *Writer) PutInOrder(j int, key, value []byte) error { return s.put(j, key, value, true) }

func (s *Writer) put(j int, key, value []byte, inOrder bool) error {
	need := len(key) + len(value) + 20
	if int64(len(s.arena))+int64(need) >= maxArena {
		return fmt.Errorf("reshard sort: a key of %d and a value of %d bytes do not fit a chunk", len(key), len(value))
	}
	if last := s.last(); last != nil && len(key) > 9 && key[0] == store.KeyRun &&
		int(last.shard) == j && last.keyLen == 9 && bytes.Equal(s.key(last), key[:9]) {
		if !s.room(need, s.lastSeq) && len(s.items)+len(s.seq) > 1 {
			// The run outgrows the arena: the items before it
			// go to a chunk, and it starts the arena again.
			if err := s.flushAllBut(); err != nil {
				return err
			}
		}
		s.appendPair(key, value)
		s.last().end = uint32(len(s.arena))
		return nil
	}
	if !s.room(need, inOrder) {
		if err := s.flush(); err != nil {
			return err
		}
		s.room(need, inOrder)
	}
	off := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	keyOff := len(s.arena)
	s.arena = append(s.arena, key...)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(value)))
	s.arena = append(s.arena, value...)
	p1, p2 := keyPrefix(key)
	s.add(sortItem{p1: p1, p2: p2, off: uint32(off), end: uint32(len(s.arena)), keyOff: uint32(keyOff),
		keyLen: uint32(len(key)), shard: uint16(j)}, inOrder)
	return nil
}

// last is the item put last (nil: none since the last chunk).
func (s *Writer) last() *sortItem {
	switch {
	case s.lastSeq && len(s.seq) > 0:
		return &s.seq[len(s.seq)-1]
	case !s.lastSeq && len(s.items) > 0:
		return &s.items[len(s.items)-1]
	}
	return nil
}

// add adds it, whose bytes are in the arena, to the items to sort or to
// the in-order ones.
func (s *Writer) add(it sortItem, inOrder bool) {
	s.lastSeq = inOrder
	if inOrder {
		s.addInOrder(it)
		return
	}
	s.items = append(s.items, it)
}

// room makes room for an item of about need bytes in the arena and in
// the items (inOrder: the in-order items and a group), growing them by
// doubling up to their limits (the arena 70% of the share, the items,
// in-order items and groups together the rest), and reports whether it
// fit.
func (s *Writer) room(need int, inOrder bool) bool {
	arenaMax := int(s.budget * 7 / 10)
	if len(s.arena)+need > cap(s.arena) {
		if cap(s.arena) >= arenaMax {
			return false
		}
		s.arena = slices.Grow(s.arena, min(max(2*cap(s.arena), 1<<20), arenaMax)-len(s.arena))
	}
	first := len(s.items)+len(s.seq) == 0 // an item fits, whatever the share
	list := &s.items
	if inOrder {
		list = &s.seq
		if len(s.groups) == cap(s.groups) && !growList(&s.groups, s.listsFree()/groupBytes, first) {
			return false
		}
	}
	if len(*list) == cap(*list) && !growList(list, s.listsFree()/sortItemBytes, first) {
		return false
	}
	return len(s.arena)+need <= cap(s.arena)
}

// listsFree is what the share leaves the lists (items, in-order items,
// groups): 30% of it, less their capacities.
func (s *Writer) listsFree() int {
	return int(s.budget*3/10) - (cap(s.items)+cap(s.seq))*sortItemBytes - cap(s.groups)*groupBytes
}

// growList grows l by doubling, by up to most elements (at least one
// for the first item), and reports whether it grew.
func growList[T any](l *[]T, most int, first bool) bool {
	n := min(max(cap(*l), 1<<10), most)
	if first {
		n = max(n, 1)
	}
	if n <= 0 {
		return false
	}
	*l = slices.Grow(*l, n)
	return true
}

func (s *Writer) appendPair(key, value []byte) {
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	s.arena = append(s.arena, key...)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(value)))
	s.arena = append(s.arena, value...)
}

func (s *Writer) key(it *sortItem) []byte { return s.arena[it.keyOff : it.keyOff+it.keyLen] }

// settle sorts the items in memory by (shard, key) and the groups by
// shard, and finds each shard's.
func (s *Writer) settle() {
	slices.SortFunc(s.items, func(a, b sortItem) int {
		switch {
		case a.shard != b.shard:
			return int(a.shard) - int(b.shard)
		case a.p1 != b.p1:
			return cmp.Compare(a.p1, b.p1)
		case a.p2 != b.p2:
			return cmp.Compare(a.p2, b.p2)
		}
		return bytes.Compare(s.key(&a), s.key(&b))
	})
	slices.SortStableFunc(s.groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.shard, b.shard), cmp.Compare(a.kind, b.kind))
	})
	s.starts = shardStarts(s.starts, s.s.shards, len(s.items), func(k int) int { return int(s.items[k].shard) })
	s.gstarts = shardStarts(s.gstarts, s.s.shards, len(s.groups), func(k int) int { return int(s.groups[k].shard) })
}

// shardStarts returns, for n elements ordered by shard, where each
// shard's start (shards+1 numbers: shard j's are [starts[j], starts[j+1])).
func shardStarts(starts []int, shards, n int, shard func(k int) int) []int {
	starts = slices.Grow(starts[:0], shards+1)[:shards+1]
	k := 0
	for j := range shards {
		starts[j] = k
		for k < n && shard(k) == j {
			k++
		}
	}
	starts[shards] = k
	return starts
}

// flush writes the arena's items, sorted and merged with the in-order
// ones, as a new chunk of the sorter.
func (w *Writer) flush() error {
	if len(w.items)+len(w.seq) == 0 {
		return nil
	}
	w.settle()
	s := w.s
	s.mu.Lock()
	if s.made == 0 {
		if err := s.fs.MkdirAll(s.dir, 0o755); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("creating the reshard scratch directory %s: %w", s.dir, err)
		}
	}
	s.made++
	c := chunk{n: s.made, sizes: make([]int64, s.shards)}
	s.mu.Unlock()
	for j := range s.shards {
		if w.starts[j] == w.starts[j+1] && w.gstarts[j] == w.gstarts[j+1] {
			continue
		}
		var err error
		if c.sizes[j], err = w.writeSection(s.section(c.n, j), j); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.chunks = append(s.chunks, c)
	s.mu.Unlock()
	w.arena, w.items, w.seq, w.groups = w.arena[:0], w.items[:0], w.seq[:0], w.groups[:0]
	clear(w.open)
	w.lastSeq = false
	return nil
}

// writeSection writes w's items of shard j, sorted, to a new scratch
// file at path, sequentially and without a sync, and returns its size.
func (w *Writer) writeSection(path string, j int) (int64, error) {
	f, err := w.s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("creating the reshard scratch file %s: %w", path, err)
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 1<<20)
	} else {
		w.bw.Reset(f)
	}
	var pos int64
	var lb [binary.MaxVarintLen64]byte
	_ = mergeWriters([]*Writer{w}, j, func(item []byte) error {
		n := binary.PutUvarint(lb[:], uint64(len(item)))
		w.bw.Write(lb[:n])
		w.bw.Write(item)
		pos += int64(n + len(item))
		return nil
	})
	err = w.bw.Flush()
	w.bw.Reset(nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("writing the reshard scratch file %s: %w", path, err)
	}
	return pos, nil
}

// flushAllBut writes every item but the last (the run being added) as a
// chunk and moves the last to the start of the arena.
func (s *Writer) flushAllBut() error {
	inOrder := s.lastSeq
	var last sortItem
	if inOrder {
		last = s.dropLastInOrder()
	} else {
		last = s.items[len(s.items)-1]
		s.items = s.items[:len(s.items)-1]
	}
	b := bytes.Clone(s.arena[last.off:last.end])
	if err := s.flush(); err != nil {
		return err
	}
	s.arena = append(s.arena, b...)
	last.keyOff -= last.off
	last.end -= last.off
	last.off, last.next = 0, 0
	s.add(last, inOrder)
	return nil
}

// Settle ends the Puts of every writer: their arenas are sorted, or
// written as the last chunks if any writer spilled.
func (s *Sorter) Settle() error {
	for _, w := range s.writers {
		if len(s.chunks) == 0 {
			w.settle()
			continue
		}
		if err := w.flush(); err != nil {
			return err
		}
		w.arena, w.items, w.seq, w.groups, w.open, w.bw = nil, nil, nil, nil, nil, nil
	}
	return nil
}

// eachPair calls fn with every pair of an item's bytes.
func eachPair(b []byte, fn func(k, v []byte) error) error {
	for len(b) > 0 {
		kl, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < kl {
			return fmt.Errorf("reshard sort: a damaged item")
		}
		k := b[n : n+int(kl)]
		b = b[n+int(kl):]
		vl, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < vl {
			return fmt.Errorf("reshard sort: a damaged item")
		}
		if err := fn(k, b[n:n+int(vl)]); err != nil {
			return err
		}
		b = b[n+int(vl):]
	}
	return nil
}

// Each calls fn with every key of new shard j and its value, in key
// order. Key and value are valid only during the call. It is called once
// for each shard: from chunks, it removes the shard's sections once it
// has merged them.
func (s *Sorter) Each(j int, fn func(k, v []byte) error) error {
	if len(s.chunks) > 0 {
		return s.merge(j, fn)
	}
	return mergeWriters(s.writers, j, func(item []byte) error { return eachPair(item, fn) })
}

// A cursor is one sorted input of a merge: an item at a time, by key.
type cursor interface {
	next() (bool, error)
	item() []byte // the current item's pairs
	key() []byte  // its first key
	// prefix is the key's first 16 bytes (keyPrefix): most
	// comparisons end there.
	prefix() (uint64, uint64)
}

// mergeWriters calls fn with every item of shard j in the writers
// (settled), in key order: kind by kind (a key's first byte), each kind
// a merge of the writers' sorted items and groups of that kind, most
// often one input (an old shard's stream), copied with no comparison.
func mergeWriters(ws []*Writer, j int, fn func(item []byte) error) error {
	k, g := make([]int, len(ws)), make([]int, len(ws)) // each writer's next item and group
	for n, w := range ws {
		k[n], g[n] = w.starts[j], w.gstarts[j]
	}
	var cursors []cursor
	for {
		kind := 256 // the smallest kind left
		for n, w := range ws {
			if k[n] < w.starts[j+1] {
				kind = min(kind, int(w.arena[w.items[k[n]].keyOff]))
			}
			if g[n] < w.gstarts[j+1] {
				kind = min(kind, int(w.groups[g[n]].kind))
			}
		}
		if kind == 256 {
			return nil
		}
		cursors = cursors[:0]
		for n, w := range ws {
			end := k[n]
			for end < w.starts[j+1] && int(w.arena[w.items[end].keyOff]) == kind {
				end++
			}
			if end > k[n] {
				cursors = append(cursors, &arenaCursor{w: w, k: k[n], end: end})
			}
			k[n] = end
			for ; g[n] < w.gstarts[j+1] && int(w.groups[g[n]].kind) == kind; g[n]++ {
				cursors = append(cursors, &groupCursor{w: w, k: int(w.groups[g[n]].first)})
			}
		}
		if err := mergeCursors(cursors, fn); err != nil {
			return err
		}
	}
}

// An arenaCursor reads one writer's sorted items of a shard, in memory.
type arenaCursor struct {
	w      *Writer
	k, end int
}

func (c *arenaCursor) next() (bool, error) {
	c.k++
	return c.k < c.end, nil
}
func (c *arenaCursor) item() []byte { it := &c.w.items[c.k]; return c.w.arena[it.off:it.end] }
func (c *arenaCursor) key() []byte  { return c.w.key(&c.w.items[c.k]) }
func (c *arenaCursor) prefix() (uint64, uint64) {
	it := &c.w.items[c.k]
	return it.p1, it.p2
}

// mergeCursors calls fn with every item of the cursors (each at its
// first item), in key order.
func mergeCursors(cursors []cursor, fn func(item []byte) error) error {
	if len(cursors) == 1 { // nothing to merge
		for ok := true; ok; {
			if err := fn(cursors[0].item()); err != nil {
				return err
			}
			var err error
			if ok, err = cursors[0].next(); err != nil {
				return err
			}
		}
		return nil
	}
	less := func(a, b cursor) bool {
		a1, a2 := a.prefix()
		b1, b2 := b.prefix()
		if a1 != b1 {
			return a1 < b1
		}
		if a2 != b2 {
			return a2 < b2
		}
		return bytes.Compare(a.key(), b.key()) < 0
	}
	HeapInit(cursors, less)
	for len(cursors) > 0 {
		cur := cursors[0]
		if err := fn(cur.item()); err != nil {
			return err
		}
		ok, err := cur.next()
		if err != nil {
			return err
		}
		if !ok {
			cursors[0] = cursors[len(cursors)-1]
			cursors = cursors[:len(cursors)-1]
		}
		SiftDown(cursors, 0, less)
	}
	return nil
}

// A chunkCursor reads one chunk's section of a shard, an item at a time.
type chunkCursor struct {
	path   string
	r      *bufio.Reader
	cur    []byte // the current item's pairs
	k      []byte // its first key (in cur)
	p1, p2 uint64 // its prefix
}

func (c *chunkCursor) item() []byte             { return c.cur }
func (c *chunkCursor) key() []byte              { return c.k }
func (c *chunkCursor) prefix() (uint64, uint64) { return c.p1, c.p2 }

func (c *chunkCursor) next() (bool, error) {
	n, err := binary.ReadUvarint(c.r)
	if err == io.EOF {
		return false, nil
	}
	if err == nil {
		c.cur = slices.Grow(c.cur[:0], int(n))[:n]
		_, err = io.ReadFull(c.r, c.cur)
	}
	if err != nil {
		return false, fmt.Errorf("reading the reshard scratch file %s: %w", c.path, err)
	}
	kl, m := binary.Uvarint(c.cur)
	if m <= 0 || uint64(len(c.cur)-m) < kl {
		return false, fmt.Errorf("reading the reshard scratch file %s: a damaged item", c.path)
	}
	c.k = c.cur[m : m+int(kl)]
	c.p1, c.p2 = keyPrefix(c.k)
	return true, nil
}

// merge is Each from the chunks: a merge of their sections for shard j,
// which are removed once merged.
func (s *Sorter) merge(j int, fn func(k, v []byte) error) error {
	// The sorter's share is for the arena; merging, two stores at once
	// read every chunk through a buffer of their half of it.
	buf := int(min(max(s.budget/int64(2*s.mergers*len(s.chunks)), 4<<10), 1<<20))
	var cursors []cursor
	var files []vfs.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, c := range s.chunks {
		if c.sizes[j] == 0 {
			continue
		}
		path := s.section(c.n, j)
		f, err := s.fs.Open(path)
		if err != nil {
			return fmt.Errorf("reading the reshard scratch file %s: %w", path, err)
		}
		files = append(files, f)
		cur := &chunkCursor{path: path, r: bufio.NewReaderSize(io.NewSectionReader(f, 0, c.sizes[j]), buf)}
		ok, err := cur.next()
		if err != nil {
			return err
		}
		if ok {
			cursors = append(cursors, cur)
		}
	}
	if err := mergeCursors(cursors, func(item []byte) error { return eachPair(item, fn) }); err != nil {
		return err
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return fmt.Errorf("reading the reshard scratch files: %w", err)
		}
	}
	files = nil
	if s.merged != nil {
		s.merged(j)
	}
	for _, c := range s.chunks {
		if c.sizes[j] == 0 {
			continue
		}
		if err := s.fs.Remove(s.section(c.n, j)); err != nil {
			return fmt.Errorf("removing the reshard scratch file %s: %w", s.section(c.n, j), err)
		}
	}
	return nil
}

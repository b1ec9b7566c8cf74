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
	items  []sortItem
	starts []int         // after Settle, without chunks: shard j's items are items[starts[j]:starts[j+1]]
	bw     *bufio.Writer // a chunk's sections' writer, reused
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

// Put adds key and value (copied) to new shard j's keys: to the last
// item when it is the same run's ('R' keys of one run number, one
// after the other), else as a new item.
func (s *Writer) Put(j int, key, value []byte) error {
	if int64(len(s.arena))+int64(len(key)+len(value)+20) >= maxArena {
		return fmt.Errorf("reshard sort: a key of %d and a value of %d bytes do not fit a chunk", len(key), len(value))
	}
	n := len(s.items)
	if n > 0 && len(key) > 9 && key[0] == store.KeyRun {
		last := &s.items[n-1]
		if int(last.shard) == j && last.keyLen == 9 && bytes.Equal(s.arena[last.keyOff:last.keyOff+9], key[:9]) {
			if !s.room(len(key)+len(value)+20) && n > 1 {
				// The run outgrows the arena: the items before it
				// go to a chunk, and it starts the arena again.
				if err := s.flushAllBut(); err != nil {
					return err
				}
			}
			s.appendPair(key, value)
			last = &s.items[len(s.items)-1]
			last.end = uint32(len(s.arena))
			return nil
		}
	}
	if !s.room(len(key) + len(value) + 20) {
		if err := s.flush(); err != nil {
			return err
		}
		s.room(len(key) + len(value) + 20)
	}
	off := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	keyOff := len(s.arena)
	s.arena = append(s.arena, key...)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(value)))
	s.arena = append(s.arena, value...)
	p1, p2 := keyPrefix(key)
	s.items = append(s.items, sortItem{p1: p1, p2: p2, off: uint32(off), end: uint32(len(s.arena)), keyOff: uint32(keyOff),
		keyLen: uint32(len(key)), shard: uint16(j)})
	return nil
}

// room makes room for an item of about need bytes in the arena and
// the items, growing them by doubling up to their limits (the arena 70%
// of the share, the items the rest), and reports whether it fit.
func (s *Writer) room(need int) bool {
	arenaMax, itemsMax := int(s.budget*7/10), int(s.budget*3/10/sortItemBytes)+1
	if len(s.arena)+need > cap(s.arena) {
		if cap(s.arena) >= arenaMax {
			return false
		}
		s.arena = growHuge(s.arena, min(max(2*cap(s.arena), 1<<20), arenaMax))
	}
	if len(s.items) == cap(s.items) {
		if cap(s.items) >= itemsMax {
			return false
		}
		s.items = growHuge(s.items, min(max(2*cap(s.items), 1<<14), itemsMax))
	}
	return len(s.arena)+need <= cap(s.arena)
}

func (s *Writer) appendPair(key, value []byte) {
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	s.arena = append(s.arena, key...)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(value)))
	s.arena = append(s.arena, value...)
}

func (s *Writer) key(it *sortItem) []byte { return s.arena[it.keyOff : it.keyOff+it.keyLen] }

// sortArena sorts the items in memory by (shard, key).
func (s *Writer) sortArena() { s.radixSort(s.items, 0) }

// radixCutoff is the most items radixSort leaves to a comparison sort.
const radixCutoff = 32

// radixBytes is how many bytes an item's radix key has: its shard (2),
// then its key's first 16 (p1, p2).
const radixBytes = 18

// radixByte is byte d of it's radix key, the most significant first:
// the radix keys order as (shard, p1, p2) do.
func radixByte(it *sortItem, d int) int {
	switch {
	case d < 2:
		return int(it.shard>>(8*(1-d))) & 0xff
	case d < 10:
		return int(it.p1>>(8*(9-d))) & 0xff
	}
	return int(it.p2>>(8*(17-d))) & 0xff
}

// radixSort sorts items, which share their radix keys' bytes before d,
// by (shard, key): in place, a byte at a time from byte d (an American
// flag sort: each item goes straight to its byte's bucket), skipping a
// byte every item shares, each bucket then sorted by the next byte.
// Buckets of at most radixCutoff items, and items whose radix keys are
// equal (the same shard and first 16 bytes), are sorted by comparing
// keys. The order is the comparison sort's: the keys of a shard are
// distinct, so there is one.
func (s *Writer) radixSort(items []sortItem, d int) {
	for len(items) > radixCutoff && d < radixBytes {
		var count [256]int
		for k := range items {
			count[radixByte(&items[k], d)]++
		}
		if count[radixByte(&items[0], d)] == len(items) {
			d++ // every item has this byte
			continue
		}
		var next, end [256]int
		sum := 0
		for b, n := range count {
			next[b] = sum
			sum += n
			end[b] = sum
		}
		for b := range 256 {
			for next[b] < end[b] {
				it := items[next[b]]
				for c := radixByte(&it, d); c != b; c = radixByte(&it, d) {
					items[next[c]], it = it, items[next[c]]
					next[c]++
				}
				items[next[b]] = it
				next[b]++
			}
		}
		start := 0
		for _, e := range end {
			if e-start > 1 {
				s.radixSort(items[start:e], d+1)
			}
			start = e
		}
		return
	}
	slices.SortFunc(items, func(a, b sortItem) int {
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
}

// flush writes the arena's items, sorted, as a new chunk of the sorter.
func (w *Writer) flush() error {
	if len(w.items) == 0 {
		return nil
	}
	w.sortArena()
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
	for k := 0; k < len(w.items); {
		j := int(w.items[k].shard)
		end := k + 1
		for end < len(w.items) && int(w.items[end].shard) == j {
			end++
		}
		var err error
		if c.sizes[j], err = w.writeSection(s.section(c.n, j), w.items[k:end]); err != nil {
			return err
		}
		k = end
	}
	s.mu.Lock()
	s.chunks = append(s.chunks, c)
	s.mu.Unlock()
	w.arena, w.items = w.arena[:0], w.items[:0]
	return nil
}

// writeSection writes items (sorted, of one shard) to a new scratch file
// at path, sequentially and without a sync, and returns its size.
func (w *Writer) writeSection(path string, items []sortItem) (int64, error) {
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
	for k := range items {
		it := &items[k]
		n := binary.PutUvarint(lb[:], uint64(it.end-it.off))
		w.bw.Write(lb[:n])
		w.bw.Write(w.arena[it.off:it.end])
		pos += int64(n) + int64(it.end-it.off)
	}
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
	last := s.items[len(s.items)-1]
	b := bytes.Clone(s.arena[last.off:last.end])
	s.items = s.items[:len(s.items)-1]
	if err := s.flush(); err != nil {
		return err
	}
	s.arena = append(s.arena, b...)
	last.keyOff -= last.off
	last.end -= last.off
	last.off = 0
	s.items = append(s.items, last)
	return nil
}

// Settle ends the Puts of every writer: their arenas are sorted, or
// written as the last chunks if any writer spilled.
func (s *Sorter) Settle() error {
	if len(s.chunks) > 0 {
		for _, w := range s.writers {
			if err := w.flush(); err != nil {
				return err
			}
			w.arena, w.items, w.bw = nil, nil, nil
		}
		return nil
	}
	for _, w := range s.writers {
		w.sortArena()
		w.starts = make([]int, s.shards+1)
		k := 0
		for j := range s.shards {
			w.starts[j] = k
			for k < len(w.items) && int(w.items[k].shard) == j {
				k++
			}
		}
		w.starts[s.shards] = k
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
	if len(s.writers) == 1 { // no merge needed
		w := s.writers[0]
		for k := w.starts[j]; k < w.starts[j+1]; k++ {
			it := &w.items[k]
			if err := eachPair(w.arena[it.off:it.end], fn); err != nil {
				return err
			}
		}
		return nil
	}
	var cursors []cursor
	for _, w := range s.writers {
		if w.starts[j] < w.starts[j+1] {
			c := &arenaCursor{w: w, k: w.starts[j] - 1, end: w.starts[j+1]}
			c.next()
			cursors = append(cursors, c)
		}
	}
	return mergeCursors(cursors, fn)
}

// A cursor is one sorted input of a merge: an item at a time, by key.
type cursor interface {
	next() (bool, error)
	item() []byte // the current item's pairs
	key() []byte  // its first key
}

// An arenaCursor reads one writer's items of a shard, in memory.
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

// mergeCursors calls fn with every pair of the cursors' items (each
// cursor at its first item), in key order.
func mergeCursors(cursors []cursor, fn func(k, v []byte) error) error {
	less := func(a, b cursor) bool { return bytes.Compare(a.key(), b.key()) < 0 }
	HeapInit(cursors, less)
	for len(cursors) > 0 {
		cur := cursors[0]
		if err := eachPair(cur.item(), fn); err != nil {
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
// An item that fits the reader's buffer is read in place (Peek: valid
// until the cursor moves on, which the merge does only once it is done
// with the item); a larger one is copied to own.
type chunkCursor struct {
	path string
	r    *bufio.Reader
	cur  []byte // the current item's pairs
	k    []byte // its first key (in cur)
	held int    // bytes of r that cur views, discarded by the next move
	own  []byte // a copy of an item larger than r's buffer
}

func (c *chunkCursor) item() []byte { return c.cur }
func (c *chunkCursor) key() []byte  { return c.k }

func (c *chunkCursor) next() (bool, error) {
	if c.held > 0 {
		c.r.Discard(c.held) // buffered already: cannot fail
		c.held = 0
	}
	p, err := c.r.Peek(binary.MaxVarintLen64)
	if len(p) == 0 {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("reading the reshard scratch file %s: %w", c.path, err)
	}
	n, m := binary.Uvarint(p)
	switch {
	case m <= 0:
		err = fmt.Errorf("a damaged item length")
	case n <= uint64(c.r.Size()-m):
		c.r.Discard(m)
		if c.cur, err = c.r.Peek(int(n)); err == nil {
			c.held = int(n)
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	default:
		c.r.Discard(m)
		c.own = slices.Grow(c.own[:0], int(n))[:n]
		c.cur = c.own
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
	var sections []*sectionReader
	defer func() {
		for _, f := range files {
			f.Close()
		}
		for _, r := range sections {
			r.close()
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
		sr := newSectionReader(s.fs, path, f, c.sizes[j])
		sections = append(sections, sr)
		cur := &chunkCursor{path: path, r: bufio.NewReaderSize(sr, buf)}
		ok, err := cur.next()
		if err != nil {
			return err
		}
		if ok {
			cursors = append(cursors, cur)
		}
	}
	if err := mergeCursors(cursors, fn); err != nil {
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

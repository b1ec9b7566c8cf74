package plan

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// The paged run map (docs/reshard.md §4, "Run lookups"). When the runs do
// not fit the compact map (runmap.go), the numbers are assigned from pass
// 1's run files (runfile.go) straight into one flat scratch file with the
// compact map's layout (assignpaged.go), read through a page cache of
// fixed size. (A spill map answered point lookups from a scratch pebble
// store whose tables all sat in L0, and every lookup probed many of them:
// at 10M runs a reshard re-read terabytes from the page cache and did not
// finish.) A lookup is a binary search in a small in-memory index of each
// section's pages, then one page, from the cache or by one read.
//
// The file is a series of sections, each starting on a page boundary,
// each page holding whole records (the rest of the page is zero):
//
//	forward, per old shard i:  old number (6 bytes), new number (6), dst (2)
//	                           ascending by old number
//	winners, per new shard j:  new number (6), old shard (2)
//	                           ascending by new number (a winner keeps its number)
//	losers, per new shard j:   old shard (2), old number (6)
//	                           the k-th is new number maxUsed+1+k
//
// Numbers are below 2^48 (model.MaxRunNo). A run's identity in the
// digests is its old (shard, number), as in the compact map.

// runPageSize is the size of a page of the paged run map.
const runPageSize = 4096

// Record sizes.
const (
	fwdRecord  = 14
	backRecord = 8
)

type pagedSection struct {
	page  int64    // the section's first page in the file
	n     int64    // records
	first []uint64 // sorted sections: the key of each page's first record
}

type pagedRunMap struct {
	fs       vfs.FS
	path     string
	f        vfs.File
	pageSize int
	maxUsed  model.RunNo
	fwd      []pagedSection // per old shard
	win      []pagedSection // per new shard
	lose     []pagedSection // per new shard
	cache    stripedCache
}

func put48(b []byte, v uint64) {
	binary.BigEndian.PutUint16(b, uint16(v>>32))
	binary.BigEndian.PutUint32(b[2:], uint32(v))
}

func get48(b []byte) uint64 {
	return uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))
}

// search finds no in sorted section s of records of size size, each
// beginning with its key (6 bytes), and calls fn with its record.
func (m *pagedRunMap) search(s *pagedSection, size int, no uint64, fn func(rec []byte)) (bool, error) {
	pg, _ := slices.BinarySearch(s.first, no+1) // the first page past no
	if pg == 0 {
		return false, nil
	}
	pg--
	per := int64(m.pageSize / size)
	n := int(min(per, s.n-int64(pg)*per))
	found := false
	err := m.cache.with(s.page+int64(pg), func(page []byte) {
		// Numbers are mostly dense: a record is at its distance from
		// the page's first, else found by a binary search. The keys are
		// distinct and ascending, so the k-th is at least first+k and at
		// most last-(n-1-k): no's record is below that distance and at
		// or above n-1 less its distance from the last. With few holes
		// in a page, that leaves a few records to search, not the page.
		lo, hi := 0, n
		if d := no - s.first[pg]; d < uint64(n) {
			if get48(page[int(d)*size:]) == no {
				found = true
				fn(page[int(d)*size : (int(d)+1)*size])
				return
			}
			hi = int(d)
		}
		if last := get48(page[(n-1)*size:]); last < no {
			return
		} else if gap := last - no; gap < uint64(n) {
			lo = n - 1 - int(gap)
		}
		for lo < hi {
			mid := (lo + hi) / 2
			if get48(page[mid*size:]) < no {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < n && get48(page[lo*size:]) == no {
			found = true
			fn(page[lo*size : (lo+1)*size])
		}
	})
	return found, err
}

// lookup returns where old run (shard, no) went.
func (m *pagedRunMap) lookup(shard int, no model.RunNo) (Mapped, bool, error) {
	if shard < 0 || shard >= len(m.fwd) {
		return Mapped{}, false, nil
	}
	var out Mapped
	ok, err := m.search(&m.fwd[shard], fwdRecord, uint64(no), func(rec []byte) {
		d := binary.BigEndian.Uint16(rec[12:])
		out = Mapped{Shard: int(d & dstShard), No: model.RunNo(get48(rec[6:])), ID: RunKey(shard, no)}
		out.Renumbered = d&dstFlag != 0
	})
	return out, ok, err
}

// identityAt is the identity of the run now at new (shard, no).
func (m *pagedRunMap) identityAt(shard int, no model.RunNo) (uint64, bool, error) {
	if shard < 0 || shard >= len(m.win) {
		return 0, false, nil
	}
	var id uint64
	if no > m.maxUsed {
		s := &m.lose[shard]
		k := uint64(no - m.maxUsed - 1)
		if k >= uint64(s.n) {
			return 0, false, nil
		}
		per := uint64(m.pageSize / backRecord)
		err := m.cache.with(s.page+int64(k/per), func(page []byte) {
			rec := page[(k%per)*backRecord:]
			id = RunKey(int(binary.BigEndian.Uint16(rec)), model.RunNo(get48(rec[2:])))
		})
		return id, err == nil, err
	}
	ok, err := m.search(&m.win[shard], backRecord, uint64(no), func(rec []byte) {
		id = RunKey(int(binary.BigEndian.Uint16(rec[6:])), no)
	})
	return id, ok, err
}

// Close closes and removes the map's file.
func (m *pagedRunMap) Close() error {
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	if rerr := m.fs.Remove(m.path); err == nil {
		err = rerr
	}
	return err
}

// A stripedCache is the paged map's cache: pageCaches, each holding the
// pages of one residue (page number modulo their count) under a lock of
// its own, so that the goroutines of every worker (each worker's rewrite
// and old digest, each new store's digest) do not queue on one lock.
type stripedCache []pageCache

// maxStripes bounds the stripes; each has at least minStripeFrames frames.
const (
	maxStripes      = 16
	minStripeFrames = 8
)

// init makes the cache of a file of pages pages.
func (c *stripedCache) init(f vfs.File, path string, pageSize, frames int, pages int64) {
	n := max(min(maxStripes, frames/minStripeFrames), 1)
	*c = make(stripedCache, n)
	for k := range *c {
		(*c)[k].init(f, path, pageSize, frames/n, (pages+int64(n)-1)/int64(n))
	}
}

// with calls fn with page pg's bytes, valid only during the call.
func (c stripedCache) with(pg int64, fn func(page []byte)) error {
	n := int64(len(c))
	return c[pg%n].with(pg, pg/n, fn)
}

// pageCache holds up to a fixed number of a file's pages, evicting by
// the clock algorithm. It is safe for concurrent use; a page is read
// under its lock (a read from the file is a few microseconds).
type pageCache struct {
	mu       sync.Mutex
	f        vfs.File
	path     string
	pageSize int
	frames   []byte
	pages    []int64 // the page in each frame (by page / stripes); -1: none
	ref      []bool
	at       []int32 // the frame of each page of the stripe (by page / stripes); -1: none
	hand     int
}

func (c *pageCache) init(f vfs.File, path string, pageSize, frames int, pages int64) {
	c.f, c.path, c.pageSize = f, path, pageSize
	c.frames = make([]byte, frames*pageSize)
	c.pages = make([]int64, frames)
	for i := range c.pages {
		c.pages[i] = -1
	}
	c.ref = make([]bool, frames)
	c.at = make([]int32, pages)
	for i := range c.at {
		c.at[i] = -1
	}
}

// with calls fn with page pg's bytes, valid only during the call; the
// page is the stripe's k-th.
func (c *pageCache) with(pg, k int64, fn func(page []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr := int(c.at[k])
	if fr < 0 {
		for c.ref[c.hand] {
			c.ref[c.hand] = false
			c.hand = (c.hand + 1) % len(c.pages)
		}
		fr = c.hand
		c.hand = (c.hand + 1) % len(c.pages)
		if old := c.pages[fr]; old >= 0 {
			c.at[old] = -1
		}
		c.pages[fr] = -1
		buf := c.frames[fr*c.pageSize : (fr+1)*c.pageSize]
		if _, err := c.f.ReadAt(buf, pg*int64(c.pageSize)); err != nil {
			return fmt.Errorf("paged run map %s: reading page %d: %w", c.path, pg, err)
		}
		c.pages[fr] = k
		c.at[k] = int32(fr)
	}
	c.ref[fr] = true
	fn(c.frames[fr*c.pageSize : (fr+1)*c.pageSize])
	return nil
}

package plan

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/reshard/internal/extsort"
)

// The assignment past the compact map (docs/reshard.md §4): from pass 1's
// run files (runfile.go) straight into the paged run map's file
// (runmapfile.go), in three steps, each reading its input once, in order:
//
//  1. A merge of the run files by number (mergeRuns): a run that keeps
//     its number is written to its new shard's winners section at once
//     (each new shard's section has its place in the file, sized for
//     every run bound there, and a buffer of its own); a loser goes to
//     the losers' sort, keyed (new shard, generation, old number, old
//     shard).
//  2. The sorted losers, new shard by new shard: the t-th is numbered
//     maxUsed+1+t and written to its shard's losers section; its (old
//     shard, old number) and new number go to a second sort.
//  3. Each old shard's forward section: its run file again, beside the
//     second sort's numbers for that shard, both by old number.
//
// The sorts are extsort's (in memory, or chunks under the pass's scratch
// directory), each with three eighths of the compact map's allowance; the
// buffers share the rest. No key-value store, no lock, no lookup.

// seqPages is the buffer, in pages, of a section written on its own.
const seqPages = 64

// A pagedAssign is the assignment under way.
type pagedAssign struct {
	s        *Pass
	m        *pagedRunMap
	nextPage int64           // the first page no section has
	losers   *extsort.Sorter // (new shard; generation, old number, old shard)
	numbers  *extsort.Sorter // (old shard; old number) -> new number
}

// assignPaged assigns every run its number from the run files into a
// paged run map whose page cache holds cacheBytes, and removes the run
// files.
func (s *Pass) assignPaged(cacheBytes int64) (err error) {
	p := s.p
	path := s.fs.PathJoin(s.dir, "runmap")
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("paged run map: %w", err)
	}
	m := &pagedRunMap{fs: s.fs, path: path, f: f, pageSize: s.pageSize, maxUsed: p.maxUsed,
		fwd: make([]pagedSection, p.oldN), win: make([]pagedSection, p.newN), lose: make([]pagedSection, p.newN)}
	sortBudget := max(s.allowance*3/8, 1)
	a := &pagedAssign{s: s, m: m,
		losers:  extsort.New(s.fs, s.fs.PathJoin(s.dir, "losers"), p.newN, sortBudget, 1),
		numbers: extsort.New(s.fs, s.fs.PathJoin(s.dir, "numbers"), p.oldN, sortBudget, 1)}
	defer func() {
		_ = s.fs.RemoveAll(s.fs.PathJoin(s.dir, "losers"))
		_ = s.fs.RemoveAll(s.fs.PathJoin(s.dir, "numbers"))
		if err != nil {
			_ = m.Close()
		}
	}()
	if err := a.winners(); err != nil {
		return err
	}
	if err := a.numberLosers(); err != nil {
		return err
	}
	if err := a.forward(); err != nil {
		return err
	}
	for _, w := range s.runs {
		if err := s.fs.Remove(w.path); err != nil {
			return fmt.Errorf("plan scratch file: %w", err)
		}
	}
	m.cache.init(f, path, s.pageSize, int(max(cacheBytes/int64(s.pageSize), 8)), a.nextPage)
	p.paged, p.spilled = m, true
	return nil
}

// openRuns opens old shard i's run file to read, through a buffer of buf
// bytes.
func (a *pagedAssign) openRuns(i, buf int) (*runFileCursor, error) {
	r, err := openRecords(a.s.fs, a.s.runs[i].path, buf)
	if err != nil {
		return nil, err
	}
	return &runFileCursor{r}, nil
}

// winners is step 1: the merge.
func (a *pagedAssign) winners() (err error) {
	s, p, m := a.s, a.s.p, a.m
	bufPages := int(min(max(s.allowance/4/int64(p.newN)/int64(s.pageSize), 1), 16))
	win := make([]*sectionWriter, p.newN)
	for j := range win {
		win[j] = newSectionWriter(m.f, &m.win[j], a.nextPage, s.pageSize, backRecord, bufPages)
		a.nextPage += pagesOf(s.toNew[j], s.pageSize, backRecord)
	}
	cur := make([]runCursor, 0, p.oldN)
	defer func() {
		for _, c := range cur {
			if cerr := c.(*runFileCursor).close(); err == nil {
				err = cerr
			}
		}
	}()
	buf := int(min(max(s.allowance/8/int64(p.oldN), 4<<10), fileBuffer))
	for i := range p.oldN {
		c, err := a.openRuns(i, buf)
		if err != nil {
			return err
		}
		cur = append(cur, c)
	}
	lw := a.losers.Writers(1)[0]
	var rec [backRecord]byte
	var key [13]byte // a zero byte first: extsort joins keys of one run ('R') into one item
	err = mergeRuns(cur, p.newN, func(r *mergedRun, wins bool) error {
		j := int(r.d & dstShard)
		p.ShardRuns[j]++
		if r.shard != j {
			p.Moved++
		}
		if !wins {
			binary.BigEndian.PutUint32(key[1:], r.gen)
			put48(key[5:], r.no)
			binary.BigEndian.PutUint16(key[11:], uint16(r.shard))
			return lw.Put(j, key[:], nil)
		}
		p.NextRun[j] = max(p.NextRun[j], model.RunNo(r.no)+1)
		put48(rec[:], r.no)
		binary.BigEndian.PutUint16(rec[6:], uint16(r.shard))
		return win[j].add(rec[:], r.no)
	})
	for _, w := range win {
		if ferr := w.flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	return a.losers.Settle()
}

// numberLosers is step 2: the losers numbered, new shard by new shard.
func (a *pagedAssign) numberLosers() error {
	s, p, m := a.s, a.s.p, a.m
	nw := a.numbers.Writers(1)[0]
	var rec [backRecord]byte
	var newNo [6]byte
	for j := range p.newN {
		w := newSectionWriter(m.f, &m.lose[j], a.nextPage, s.pageSize, backRecord, seqPages)
		err := a.losers.Each(j, func(k, _ []byte) error {
			put48(newNo[:], uint64(p.maxUsed)+1+uint64(w.sec.n))
			copy(rec[:2], k[11:13])
			copy(rec[2:], k[5:11])
			if err := w.add(rec[:], 0); err != nil {
				return err
			}
			return nw.Put(int(binary.BigEndian.Uint16(k[11:])), k[5:11], newNo[:])
		})
		if err == nil {
			err = w.flush()
		}
		if err != nil {
			return err
		}
		n := w.sec.n
		a.nextPage += pagesOf(n, s.pageSize, backRecord)
		p.Renumbered += n
		// Every new shard continues above every number any old shard
		// used, so a reference that a renumbering could have made
		// ambiguous never names a future run.
		p.NextRun[j] = max(p.NextRun[j], p.maxUsed+model.RunNo(n)+1)
	}
	return a.numbers.Settle()
}

// forward is step 3: each old shard's forward section.
func (a *pagedAssign) forward() error {
	s, m := a.s, a.m
	for i := range s.p.oldN {
		c, err := a.openRuns(i, fileBuffer)
		if err != nil {
			return err
		}
		w := newSectionWriter(m.f, &m.fwd[i], a.nextPage, s.pageSize, fwdRecord, seqPages)
		err = a.forwardShard(i, c, w)
		if cerr := c.close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = w.flush()
		}
		if err != nil {
			return err
		}
		a.nextPage += pagesOf(w.sec.n, s.pageSize, fwdRecord)
	}
	return nil
}

// forwardShard writes old shard i's runs, read by c, to w: a run keeps
// its number unless the second sort gives it one.
func (a *pagedAssign) forwardShard(i int, c *runFileCursor, w *sectionWriter) error {
	var rec [fwdRecord]byte
	put := func(r passRun, newNo uint64, renumbered bool) error {
		d := r.d & dstShard
		if renumbered {
			d |= dstFlag
		}
		put48(rec[:], r.no)
		put48(rec[6:], newNo)
		binary.BigEndian.PutUint16(rec[12:], d)
		return w.add(rec[:], r.no)
	}
	err := a.numbers.Each(i, func(k, v []byte) error {
		no := get48(k)
		for {
			r, ok := c.next()
			if !ok || r.no > no {
				return fmt.Errorf("internal error: renumbered run %d of old shard %d is not in its run file", no, i)
			}
			if r.no == no {
				return put(r, get48(v), true)
			}
			if err := put(r, r.no, r.d&dstPrior != 0); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	for r, ok := c.next(); ok; r, ok = c.next() {
		if err := put(r, r.no, r.d&dstPrior != 0); err != nil {
			return err
		}
	}
	return c.err
}

// A sectionWriter writes one section of the paged map's fixed-size
// records, from its first page on, through a buffer of whole pages: no
// record straddles pages, and a page's unused end is zero.
type sectionWriter struct {
	f        vfs.File
	sec      *pagedSection
	pageSize int
	size     int
	per      int64  // records per page
	buf      []byte // whole pages, from off
	off      int64
}

// newSectionWriter begins sec at page, for records of size bytes,
// through a buffer of bufPages pages.
func newSectionWriter(f vfs.File, sec *pagedSection, page int64, pageSize, size, bufPages int) *sectionWriter {
	*sec = pagedSection{page: page}
	return &sectionWriter{f: f, sec: sec, pageSize: pageSize, size: size, per: int64(pageSize / size),
		buf: make([]byte, 0, bufPages*pageSize), off: page * int64(pageSize)}
}

// pagesOf is how many pages n records of size bytes take.
func pagesOf(n int64, pageSize, size int) int64 {
	per := int64(pageSize / size)
	return (n + per - 1) / per
}

// add appends rec, whose key (for a sorted section) is key.
func (w *sectionWriter) add(rec []byte, key uint64) error {
	slot := int(w.sec.n % w.per)
	if slot == 0 { // a new page
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return err
			}
		}
		w.buf = w.buf[:len(w.buf)+w.pageSize]
		clear(w.buf[len(w.buf)-w.pageSize:])
		w.sec.first = append(w.sec.first, key)
	}
	copy(w.buf[len(w.buf)-w.pageSize+slot*w.size:], rec)
	w.sec.n++
	return nil
}

// flush writes the buffer's pages at their place.
func (w *sectionWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return fmt.Errorf("paged run map: %w", err)
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

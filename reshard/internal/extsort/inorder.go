package extsort

import (
	"bytes"
	"strings"
)

// In-order items (Writer.PutInOrder) skip the sort: a new shard's keys
// that a caller can put in ascending order (per kind, as an old shard
// gives them) are kept in groups, each ascending, and merged with the
// sorted items and the other groups when a chunk or a store is written.
// A group is one stream of one kind for one shard: the next in-order
// item of that stream joins it if its key is above the group's last,
// else it starts a new group (as when a writer goes on to another old
// shard), so an order a caller claims is checked at each key, and what
// is written is sorted whatever it claims.

// group is an ascending run of in-order items of a shard: seq[first]
// and on through their next links to seq[last].
type group struct {
	first, last uint32
	shard       uint16
	kind        byte // its keys' first byte
}

// groupBytes is what a group costs.
const groupBytes = 12

// kinds are the key kinds (a key's first byte) that have a group each
// per shard; any other kind shares the last.
const kinds = "AHIORST"

func kindSlot(kind byte) int {
	if k := strings.IndexByte(kinds, kind); k >= 0 {
		return k
	}
	return len(kinds)
}

// addInOrder adds it to the open group of its shard and kind if its key
// is above that group's last, else to a new group.
func (s *Writer) addInOrder(it sortItem) {
	k := uint32(len(s.seq))
	s.seq = append(s.seq, it)
	if s.open == nil {
		s.open = make([]int32, s.s.shards*(len(kinds)+1))
	}
	slot := int(it.shard)*(len(kinds)+1) + kindSlot(s.arena[it.keyOff])
	if g := s.open[slot] - 1; g >= 0 {
		grp := &s.groups[g]
		if bytes.Compare(s.key(&s.seq[grp.last]), s.key(&s.seq[k])) < 0 {
			s.seq[grp.last].next = k + 1
			grp.last = k
			return
		}
	}
	s.groups = append(s.groups, group{first: k, last: k, shard: it.shard, kind: s.arena[it.keyOff]})
	s.open[slot] = int32(len(s.groups))
}

// dropLastInOrder takes the last in-order item out of seq and its group
// (flushAllBut), and returns it.
func (s *Writer) dropLastInOrder() sortItem {
	k := uint32(len(s.seq) - 1)
	it := s.seq[k]
	slot := int(it.shard)*(len(kinds)+1) + kindSlot(s.arena[it.keyOff])
	g := s.open[slot] - 1 // the group it was added to last
	grp := &s.groups[g]
	if grp.first == k { // the group it started: the last made
		s.groups = s.groups[:g]
		s.open[slot] = 0
	} else {
		p := grp.first
		for s.seq[p].next != k+1 {
			p = s.seq[p].next - 1
		}
		s.seq[p].next = 0
		grp.last = p
	}
	s.seq = s.seq[:k]
	return it
}

// A groupCursor reads one group of a writer, in memory.
type groupCursor struct {
	w *Writer
	k int
}

func (c *groupCursor) next() (bool, error) {
	n := c.w.seq[c.k].next
	c.k = int(n) - 1
	return n != 0, nil
}
func (c *groupCursor) item() []byte { it := &c.w.seq[c.k]; return c.w.arena[it.off:it.end] }
func (c *groupCursor) key() []byte  { return c.w.key(&c.w.seq[c.k]) }
func (c *groupCursor) prefix() (uint64, uint64) {
	it := &c.w.seq[c.k]
	return it.p1, it.p2
}

package plan

import (
	"math"
	"math/bits"
	"slices"
)

// A rankSet is a set of 32-bit numbers added in ascending order that
// answers, for a number, its rank among the members (how many are
// smaller), and for a rank, the member. The compact run map
// (runmap.go) indexes its per-run arrays by rank, so that a shard whose
// numbers are dense costs a bit and a half a run instead of the four
// bytes of a sorted array.
//
// It is held in one of two forms, whichever is smaller: a sorted array
// of the members, or a bitmap over [base, base+64*len(words)) with the
// count of members before each word (12 bytes per 64 numbers).
type rankSet struct {
	plain []uint32 // the sorted form (words nil)
	base  uint32   // the bitmap form: words[w] bit b is number base+64w+b
	words []uint64
	cum   []uint32 // members before words[w]
	n     int
}

// bitmapBytes is what the bitmap form costs for numbers in [lo, hi].
func bitmapBytes(lo, hi uint32) int64 { return (int64(hi-lo)/64 + 1) * 12 }

// newRankSet is an empty set that will hold n members in [lo, hi], in
// whichever form is smaller.
func newRankSet(lo, hi uint32, n int) rankSet {
	if n == 0 {
		return rankSet{}
	}
	if bitmapBytes(lo, hi) < 4*int64(n) {
		w := (int64(hi-lo))/64 + 1
		return rankSet{base: lo, words: make([]uint64, w), cum: make([]uint32, w)}
	}
	return rankSet{plain: make([]uint32, 0, n)}
}

// add adds x, which must be larger than every member (the caller checks).
func (s *rankSet) add(x uint32) {
	s.n++
	if s.words == nil {
		s.plain = append(s.plain, x)
		return
	}
	d := x - s.base
	s.words[d/64] |= 1 << (d % 64)
}

// last is the largest member (the set must not be empty).
func (s *rankSet) last() uint32 {
	if s.words == nil {
		return s.plain[len(s.plain)-1]
	}
	for w := len(s.words) - 1; ; w-- {
		if s.words[w] != 0 {
			return s.base + uint32(w*64+63-bits.LeadingZeros64(s.words[w]))
		}
	}
}

// seal finishes the set: the bitmap form's counts are made, and a sorted
// array is turned into a bitmap when that is smaller.
func (s *rankSet) seal() {
	if s.words == nil && len(s.plain) > 0 && bitmapBytes(s.plain[0], s.plain[len(s.plain)-1]) < 4*int64(len(s.plain)) {
		b := newRankSet(s.plain[0], s.plain[len(s.plain)-1], len(s.plain))
		for _, x := range s.plain {
			b.add(x)
		}
		*s = b
	} else if s.words == nil && cap(s.plain) > len(s.plain)+len(s.plain)/8 {
		s.plain = slices.Clone(s.plain) // give back what a reservation overestimated
	}
	if s.words != nil {
		c := uint32(0)
		for w, x := range s.words {
			s.cum[w] = c
			c += uint32(bits.OnesCount64(x))
		}
	}
}

// bytes is what the set holds.
func (s *rankSet) bytes() int64 {
	return 4*int64(cap(s.plain)) + 8*int64(cap(s.words)) + 4*int64(cap(s.cum))
}

// rank returns x's rank and whether x is a member (the set must be sealed).
func (s *rankSet) rank(x uint64) (int, bool) {
	if s.words == nil {
		return find(s.plain, x)
	}
	if x < uint64(s.base) {
		return 0, false
	}
	d := x - uint64(s.base)
	w := d / 64
	if w >= uint64(len(s.words)) {
		return 0, false
	}
	word := s.words[w]
	bit := uint64(1) << (d % 64)
	return int(s.cum[w]) + bits.OnesCount64(word&(bit-1)), word&bit != 0
}

// at returns the member of rank k (0 <= k < s.n; the set must be sealed).
func (s *rankSet) at(k int) uint32 {
	if s.words == nil {
		return s.plain[k]
	}
	// The last word with at most k members before it holds member k.
	i, _ := slices.BinarySearch(s.cum, uint32(k)+1)
	w := i - 1
	// Member r of the word: past the bytes holding fewer, then within
	// its byte.
	word, r, at := s.words[w], k-int(s.cum[w]), w*64
	for c := bits.OnesCount8(uint8(word)); r >= c; c = bits.OnesCount8(uint8(word)) {
		r -= c
		word >>= 8
		at += 8
	}
	for ; r > 0; r-- {
		word &= word - 1
	}
	return s.base + uint32(at+bits.TrailingZeros64(word))
}

// find returns the index of no in the ascending nos: a direct index when
// the numbers up to it are dense, else a binary search.
func find(nos []uint32, no uint64) (int, bool) {
	if len(nos) == 0 || no > math.MaxUint32 || uint32(no) < nos[0] {
		return 0, false
	}
	if k := no - uint64(nos[0]); k < uint64(len(nos)) && nos[k] == uint32(no) {
		return int(k), true
	}
	return slices.BinarySearch(nos, uint32(no))
}

package plan

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRankSetMatchesSlice: a rankSet, made in either form (sized up front
// or sealed from a sorted array), answers rank, at and its cursor as the
// sorted slice of its members does, for numbers in and out of it, at
// densities from one in a word to full words.
func TestRankSetMatchesSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.SampledFrom([]uint32{0, 1, 63, 64, 1 << 31, 1<<32 - 1000}).Draw(t, "lo")
		span := rapid.SampledFrom([]uint32{1, 64, 65, 300, 999}).Draw(t, "span")
		n := rapid.IntRange(0, int(span)).Draw(t, "n")
		xs := rapid.SliceOfNDistinct(rapid.Uint32Range(lo, lo+span-1), n, n, rapid.ID[uint32]).Draw(t, "members")
		slices.Sort(xs)
		var s rankSet
		if len(xs) > 0 && rapid.Bool().Draw(t, "sized") {
			s = newRankSet(xs[0], xs[len(xs)-1], len(xs))
		}
		for _, x := range xs {
			s.add(x)
		}
		s.seal()
		if s.n != len(xs) {
			t.Fatalf("%d members, want %d", s.n, len(xs))
		}
		if len(xs) > 0 {
			if s.last() != xs[len(xs)-1] {
				t.Fatalf("last %d, want %d", s.last(), xs[len(xs)-1])
			}
		}
		for x := uint64(lo) - min(uint64(lo), 2); x <= uint64(lo)+uint64(span)+2; x++ {
			k, ok := s.rank(x)
			wk, wok := slices.BinarySearch(xs, uint32(x))
			if x > 1<<32-1 {
				wk, wok = len(xs), false
			}
			if ok != wok || ok && k != wk {
				t.Fatalf("rank(%d) = %d, %v; want %d, %v (bitmap %v)", x, k, ok, wk, wok, s.words != nil)
			}
		}
		cur := rankCursor{s: &s, w: -1}
		for k, x := range xs {
			if got := s.at(k); got != x {
				t.Fatalf("at(%d) = %d, want %d (bitmap %v)", k, got, x, s.words != nil)
			}
			if got, ok := cur.next(); !ok || got != x {
				t.Fatalf("cursor's %d-th = %d, %v; want %d", k, got, ok, x)
			}
		}
		if _, ok := cur.next(); ok {
			t.Fatal("cursor past the last member")
		}
		// The smaller form is chosen.
		if len(xs) > 0 && (s.words != nil) != (bitmapBytes(xs[0], xs[len(xs)-1]) < 4*int64(len(xs))) {
			t.Fatalf("bitmap %v for %d members in [%d, %d]", s.words != nil, len(xs), xs[0], xs[len(xs)-1])
		}
	})
}

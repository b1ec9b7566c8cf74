package extsort

// The k-way merges of the run map (old shards by their next run number)
// and of the run sorter (scratch chunks by their next key) keep their
// inputs in a binary min-heap through these two functions, typed, so
// that no comparison goes through container/heap's interface.

// HeapInit orders h as a min-heap under less.
func HeapInit[T any](h []T, less func(a, b T) bool) {
	for k := len(h)/2 - 1; k >= 0; k-- {
		SiftDown(h, k, less)
	}
}

// SiftDown moves h[k] down the min-heap h to its place, after it grew or
// was replaced.
func SiftDown[T any](h []T, k int, less func(a, b T) bool) {
	for {
		l := 2*k + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			l = r
		}
		if !less(h[l], h[k]) {
			return
		}
		h[k], h[l] = h[l], h[k]
		k = l
	}
}

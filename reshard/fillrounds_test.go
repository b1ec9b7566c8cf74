package reshard

import "testing"

// TestFillRounds: the worker count leaves no core idle in the last round
// where a count up to twice the base does that, and changes nothing
// where the base already does.
func TestFillRounds(t *testing.T) {
	for _, c := range []struct{ n, k, most, cores, want int }{
		{3, 2, 8, 2, 3},  // 8->3 on two cores: all three at once
		{16, 2, 8, 2, 2}, // divides
		{12, 2, 8, 2, 2}, // divides
		{5, 2, 8, 2, 3},  // 3 then 2
		{7, 2, 8, 2, 4},  // 4 then 3
		{3, 2, 2, 2, 2},  // the budget allows no more
		{1, 2, 8, 2, 2},  // one store: nothing to fill
		{9, 4, 8, 4, 5},  // 4, 4, 1 leaves three cores idle; 5 then 4
		{20, 16, 32, 16, 20},
	} {
		if got := fillRounds(c.n, c.k, c.most, c.cores); got != c.want {
			t.Errorf("fillRounds(n %d, k %d, most %d, cores %d) = %d, want %d", c.n, c.k, c.most, c.cores, got, c.want)
		}
	}
}

// TestReaderCacheShare: the store readers' caches together hold
// readerCacheBytes whatever the cores (more cores, not more memory),
// until each is down to its 1 MiB floor.
func TestReaderCacheShare(t *testing.T) {
	for cores := 1; cores <= 64; cores++ {
		share := readerCacheShare(cores)
		total := share * int64(max(cores, 2))
		if share < 1<<20 || (total > readerCacheBytes && share != 1<<20) || (share > 1<<20 && total < readerCacheBytes/2) {
			t.Errorf("%d cores: %d KiB a reader, %d KiB in all", cores, share>>10, total>>10)
		}
	}
}

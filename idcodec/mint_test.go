package idcodec

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// seeded is deterministic ulid entropy for tests.
func seeded(seed byte) *rand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

// fixedClock returns the same instant every time: every ulid falls in one
// millisecond.
func fixedClock() time.Time { return time.UnixMilli(1_700_000_000_000) }

func TestStampPicksOwnedByHash(t *testing.T) {
	p := NewPlacement("orders", "", 4, []int64{3, 8})
	m := NewMinter(p, seeded(1), nil)
	seen := map[int64]int{}
	for range 1000 {
		u, err := m.NewULID()
		if err != nil {
			t.Fatal(err)
		}
		epoch, shard, err := p.Stamp(u)
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{3, 8}[ShardFor(u, 2)]
		if epoch != 4 || shard != want {
			t.Fatalf("Stamp(%s) = e%d s%d, want e4 s%d", u, epoch, shard, want)
		}
		seen[shard]++
	}
	if seen[3] == 0 || seen[8] == 0 {
		t.Errorf("shards chosen: %v, want both 3 and 8", seen)
	}
}

func TestStampSingleOwned(t *testing.T) {
	p := NewPlacement("orders", "eu1", 2, []int64{5})
	m := NewMinter(p, seeded(2), nil)
	for range 200 {
		id, err := m.Mint()
		if err != nil {
			t.Fatal(err)
		}
		got := Parse(id)
		if got.Legacy || got.Shard != 5 || got.Epoch != 2 || got.Cell != "eu1" || got.Namespace != "orders" {
			t.Fatalf("Mint() = %q parsed %+v, want orders.ceu1.e2.s5.*", id, got)
		}
	}
}

func TestStandby(t *testing.T) {
	for _, owned := range [][]int64{nil, {}} {
		p := NewPlacement("orders", "", 1, owned)
		if _, _, err := p.Stamp(u); !errors.Is(err, ErrStandby) {
			t.Errorf("Stamp with owned %v = %v, want ErrStandby", owned, err)
		}
		if _, err := NewMinter(p, seeded(3), nil).Mint(); !errors.Is(err, ErrStandby) {
			t.Errorf("Mint with owned %v = %v, want ErrStandby", owned, err)
		}
	}
}

func TestPlacementIsImmutable(t *testing.T) {
	owned := []int64{3, 8}
	p := NewPlacement("orders", "", 1, owned)
	owned[0] = 99
	got := p.Owned()
	got[1] = 77
	if o := p.Owned(); !slices.Equal(o, []int64{3, 8}) {
		t.Errorf("Owned() = %v after changing the caller's and the returned slices, want [3 8]", o)
	}
}

// TestDistribution: fresh ulids spread evenly, within 10%, over 8 shards.
func TestDistribution(t *testing.T) {
	const total, shards = 100_000, 8
	entropy := ulid.Monotonic(seeded(4), 0)
	start := time.UnixMilli(1_700_000_000_000)
	var counts [shards]int
	for i := range total {
		// About a hundred ids per millisecond, as a busy cell mints them.
		u := ulid.MustNew(ulid.Timestamp(start.Add(time.Duration(i/100)*time.Millisecond)), entropy)
		counts[ShardFor(u.String(), shards)]++
	}
	for s, c := range counts {
		if c < total/shards*9/10 || c > total/shards*11/10 {
			t.Errorf("shard %d got %d of %d ids, want %d ± 10%% (all: %v)", s, c, total, total/shards, counts)
		}
	}
}

// TestMintOrderWithinMillisecond: ids minted in one millisecond sort in
// the order they were minted.
func TestMintOrderWithinMillisecond(t *testing.T) {
	single := NewMinter(NewPlacement("orders", "", 1, []int64{0}), seeded(5), fixedClock)
	var ids []string
	for range 1000 {
		id, err := single.Mint()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) {
		t.Error("ids minted in one millisecond on one shard do not sort in mint order")
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Error("duplicate ids")
	}

	// Across shards the ids differ in their s segment; their ulids still
	// sort in mint order.
	multi := NewMinter(NewPlacement("orders", "", 1, []int64{0, 1, 2, 3}), seeded(6), fixedClock)
	var ulids []string
	for range 1000 {
		id, err := multi.Mint()
		if err != nil {
			t.Fatal(err)
		}
		ulids = append(ulids, Parse(id).ULID)
	}
	if !slices.IsSorted(ulids) {
		t.Error("ulids minted in one millisecond do not sort in mint order")
	}
}

// TestRepointRace: while a writer flips the placement between epoch 1
// (shards 0, 1) and epoch 2 (shards 2, 3), no minted id pairs one
// placement's epoch with the other's shard. Run with -race.
func TestRepointRace(t *testing.T) {
	e1 := NewPlacement("orders", "", 1, []int64{0, 1})
	e2 := NewPlacement("orders", "", 2, []int64{2, 3})
	m := NewMinter(e1, seeded(7), nil)

	var stop atomic.Bool
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				m.Repoint(e2)
			} else {
				m.Repoint(e1)
			}
		}
	})

	const readers, each = 8, 2000
	var wg sync.WaitGroup
	var perEpoch [3]atomic.Int64
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			for range each {
				id, err := m.Mint()
				if err != nil {
					errs <- err
					return
				}
				p := Parse(id)
				ok := p.Epoch == 1 && (p.Shard == 0 || p.Shard == 1) ||
					p.Epoch == 2 && (p.Shard == 2 || p.Shard == 3)
				if !ok {
					errs <- errors.New("inconsistent id " + id)
					return
				}
				perEpoch[p.Epoch].Add(1)
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	writer.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("epoch 1: %d ids, epoch 2: %d ids", perEpoch[1].Load(), perEpoch[2].Load())
}

// TestMintConcurrentUnique: concurrent mints never repeat an id.
func TestMintConcurrentUnique(t *testing.T) {
	m := NewMinter(NewPlacement("orders", "", 1, []int64{0, 1, 2}), seeded(8), fixedClock)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				id, err := m.Mint()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

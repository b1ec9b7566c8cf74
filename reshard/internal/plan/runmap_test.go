package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"pgregory.net/rapid"
)

// TestRunMapMatchesOracle: the compact run map's and the paged run map's
// assignments and lookups against the rules of docs/reshard.md §2 done
// the plain way (Go maps and one sort), on random shard counts, sparse and
// colliding run numbers, states, generations and earlier renumberings.
func TestRunMapMatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		oldN := rapid.IntRange(1, 6).Draw(t, "oldN")
		newN := rapid.IntRange(1, 8).Draw(t, "newN")
		type run struct {
			shard      int
			no         model.RunNo
			j          int
			unfinished bool
			prior      bool
			gen        uint32
		}
		var runs []run
		var maxUsed model.RunNo
		span := rapid.SampledFrom([]uint64{4, 40, 1000}).Draw(t, "span")
		// Numbers past 32 bits: only the paged map takes them.
		base := rapid.SampledFrom([]uint64{0, 1 << 31, 1 << 40}).Draw(t, "base")
		for i := range oldN {
			var nos []uint64
			if rapid.Bool().Draw(t, "dense") {
				// A run of numbers with a few holes: the bitmap form,
				// over several words.
				first := base + 1 + rapid.Uint64Range(0, 70).Draw(t, "first")
				holes := rapid.SliceOfNDistinct(rapid.Uint64Range(0, 199), 0, 8, rapid.ID[uint64]).Draw(t, "holes")
				for k := range rapid.Uint64Range(0, 200).Draw(t, "length") {
					if !slices.Contains(holes, k) {
						nos = append(nos, first+k)
					}
				}
			} else {
				nos = rapid.SliceOfNDistinct(rapid.Uint64Range(base+1, base+span), 0, 30, rapid.ID[uint64]).Draw(t, "nos")
				slices.Sort(nos)
			}
			for _, no := range nos {
				runs = append(runs, run{shard: i, no: model.RunNo(no), j: rapid.IntRange(0, newN-1).Draw(t, "j"),
					unfinished: rapid.Bool().Draw(t, "unf"), prior: rapid.Bool().Draw(t, "prior"),
					gen: rapid.SampledFrom([]uint32{1, 2, 3, 1, 2, 3, genBig - 1, genBig, genBig + 1, math.MaxUint32}).Draw(t, "gen")})
				maxUsed = max(maxUsed, model.RunNo(no))
			}
		}
		maxUsed += model.RunNo(rapid.IntRange(0, 3).Draw(t, "slack"))

		// The oracle.
		type key struct {
			shard int
			no    model.RunNo
		}
		type want struct {
			to   key // new shard, new number
			flag bool
		}
		byNumber := map[key][]run{} // (new shard, number) -> runs wanting it
		for _, r := range runs {
			byNumber[key{r.j, r.no}] = append(byNumber[key{r.j, r.no}], r)
		}
		fwd, rev := map[key]want{}, map[key]key{}
		var losers []run
		next := make([]model.RunNo, newN)
		for j := range next {
			next[j] = 1
		}
		for k, rs := range byNumber {
			w := slices.MinFunc(rs, func(a, b run) int {
				return cmp.Or(-cmp.Compare(b2i(a.unfinished), b2i(b.unfinished)), cmp.Compare(a.shard, b.shard))
			})
			for _, r := range rs {
				if r != w {
					losers = append(losers, r)
				}
			}
			fwd[key{w.shard, w.no}] = want{to: k, flag: w.prior}
			rev[k] = key{w.shard, w.no}
			next[k.shard] = max(next[k.shard], k.no+1)
		}
		slices.SortFunc(losers, func(a, b run) int {
			return cmp.Or(cmp.Compare(a.j, b.j), cmp.Compare(a.gen, b.gen), cmp.Compare(a.no, b.no), cmp.Compare(a.shard, b.shard))
		})
		counter := make([]model.RunNo, newN)
		for j := range counter {
			counter[j] = maxUsed + 1
		}
		for _, r := range losers {
			to := key{r.j, counter[r.j]}
			counter[r.j]++
			fwd[key{r.shard, r.no}] = want{to: to, flag: true}
			rev[to] = key{r.shard, r.no}
		}
		for j := range next {
			next[j] = max(next[j], counter[j])
		}

		// check compares a map's answers and p's counters with the oracle.
		check := func(name string, p *Plan, lookup func(int, model.RunNo) (Mapped, bool, error), identityAt func(int, model.RunNo) (uint64, bool, error)) {
			for k, w := range fwd {
				m, ok, err := lookup(k.shard, k.no)
				if err != nil || !ok || m.Shard != w.to.shard || m.No != w.to.no || m.Renumbered != w.flag || m.ID != RunKey(k.shard, k.no) {
					t.Fatalf("%s: lookup %v = %+v %v %v, want %+v", name, k, m, ok, err, w)
				}
			}
			for k, old := range rev {
				id, ok, err := identityAt(k.shard, k.no)
				if err != nil || !ok || id != RunKey(old.shard, old.no) {
					t.Fatalf("%s: identityAt %v = %x %v %v, want %v", name, k, id, ok, err, old)
				}
			}
			// Numbers no run has, on either side.
			for range 20 {
				s := rapid.IntRange(-1, max(oldN, newN)).Draw(t, "absent shard")
				no := model.RunNo(rapid.Uint64Range(0, uint64(maxUsed)+40).Draw(t, "absent no"))
				_, okF, err := lookup(s, no)
				if _, want := fwd[key{s, no}]; okF != want || err != nil {
					t.Fatalf("%s: lookup %d:%d found %v (%v), want %v", name, s, no, okF, err, want)
				}
				_, okR, err := identityAt(s, no)
				if _, want := rev[key{s, no}]; okR != want || err != nil {
					t.Fatalf("%s: identityAt %d:%d found %v (%v), want %v", name, s, no, okR, err, want)
				}
			}
			if !slices.Equal(p.NextRun, next) {
				t.Fatalf("%s: next runs %v, want %v", name, p.NextRun, next)
			}
			if p.Renumbered != int64(len(losers)) {
				t.Fatalf("%s: renumbered %d, want %d", name, p.Renumbered, len(losers))
			}
			var moved int64
			shardRuns := make([]int64, newN)
			for _, r := range runs {
				shardRuns[r.j]++
				if r.j != r.shard {
					moved++
				}
			}
			if p.Moved != moved || !slices.Equal(p.ShardRuns, shardRuns) {
				t.Fatalf("%s: moved %d, runs per shard %v; want %d, %v", name, p.Moved, p.ShardRuns, moved, shardRuns)
			}
		}
		state := func(unfinished bool) model.RunState {
			if unfinished {
				return model.StateParked
			}
			return model.StateFinished
		}

		// The compact map (numbers of 32 bits).
		if base < math.MaxUint32 {
			// Every run fits: compactEntryBytes each, and bigGenBytes more
			// for a generation of 16 bits or more.
			allowance := int64(len(runs)) * compactEntryBytes
			for _, r := range runs {
				if r.gen >= genBig {
					allowance += bigGenBytes
				}
			}
			c := newRunMap(oldN, newN, allowance)
			for _, r := range runs {
				if err := c.add(r.shard, r.no, r.j, &model.RunEntry{State: state(r.unfinished), Gen: r.gen, Renumbered: r.prior}); err != nil {
					t.Fatalf("add %+v: %v", r, err)
				}
			}
			if err := c.add(0, math.MaxUint32+1, 0, &model.RunEntry{}); !errors.Is(err, errMapFull) {
				t.Fatalf("a run past the allowance: %v, want errMapFull", err)
			}
			p := &Plan{maxUsed: maxUsed, NextRun: make([]model.RunNo, newN), ShardRuns: make([]int64, newN)}
			if err := c.assign(p); err != nil {
				t.Fatal(err)
			}
			check("compact", p, func(s int, no model.RunNo) (Mapped, bool, error) { m, ok := c.lookup(s, no); return m, ok, nil },
				func(s int, no model.RunNo) (uint64, bool, error) { id, ok := c.identityAt(s, no); return id, ok, nil })
		}

		// A Pass, whose compact map holds anything from nothing to every
		// run: it spills at its first run, part-way through pass 1, when
		// the assignment does not fit (its allowance cut to what pass 1
		// holds), or never. Paged, its pages are
		// as small as one record and its cache eight pages, so that
		// lookups cross pages and evict. Every old shard is passed on a
		// goroutine of its own.
		fs := vfs.NewMem()
		allowance := rapid.Int64Range(0, int64(len(runs))*compactEntryBytes).Draw(t, "allowance")
		details := rapid.Bool().Draw(t, "details")
		s := NewPass(fs, "scratch", oldN, newN, allowance, details)
		defer s.Close()
		s.pageSize = rapid.SampledFrom([]int{fwdRecord, 2 * backRecord, 64, runPageSize}).Draw(t, "page size")
		pruns := make([]passRunOf, len(runs))
		for k, r := range runs {
			pruns[k] = passRunOf{shard: r.shard, no: r.no, j: r.j, e: model.RunEntry{State: state(r.unfinished), Gen: r.gen,
				Renumbered: r.prior, WorkflowID: fmt.Sprintf("wf-%d-%d", r.shard, r.no)}}
		}
		if err := passConcurrently(s, oldN, maxUsed, pruns); err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "no room to assign") && !s.spilled.Load() {
			s.c.limit = s.c.bytes.Load() // pass 1 fit; the assignment will not
		}
		ps, err := s.Assign(0)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		if ps.Spilled() != (ps.paged != nil) || ps.Spilled() == (ps.compact != nil) {
			t.Fatalf("spilled %v, paged %v, compact %v", ps.Spilled(), ps.paged != nil, ps.compact != nil)
		}
		check(fmt.Sprintf("pass (spilled %v)", ps.Spilled()), ps, ps.Lookup, ps.IdentityAt)
		if details {
			checkEachRun(t, ps, pruns)
		} else if err := ps.EachRun(func(int, model.RunNo, Mapped) error { return nil }); err == nil {
			t.Fatal("EachRun listed runs whose details the pass did not keep")
		}
	})
}

// passRunOf is a test run as a pass gets it.
type passRunOf struct {
	shard int
	no    model.RunNo
	j     int
	e     model.RunEntry
}

// passConcurrently passes each old shard's runs (ascending) on a goroutine
// of its own, its header's next run maxUsed+1.
func passConcurrently(s *Pass, oldN int, maxUsed model.RunNo, runs []passRunOf) error {
	errs := make(chan error, oldN)
	for i := range oldN {
		go func() {
			sp, err := s.Shard(i, model.CheckpointHeader{NextRun: maxUsed + 1}, 0)
			for _, r := range runs {
				if err == nil && r.shard == i {
					err = sp.Add(r.no, r.j, &r.e)
				}
			}
			if err == nil {
				err = sp.End()
			}
			errs <- err
		}()
	}
	var first error
	for range oldN {
		if err := <-errs; first == nil {
			first = err
		}
	}
	return first
}

// checkEachRun: EachRun lists every run by old shard and number, with
// what pass 1 read of it and where Lookup says it went.
func checkEachRun(t *rapid.T, p *Plan, runs []passRunOf) {
	want := slices.Clone(runs)
	slices.SortFunc(want, func(a, b passRunOf) int { return cmp.Or(cmp.Compare(a.shard, b.shard), cmp.Compare(a.no, b.no)) })
	k := 0
	err := p.EachRun(func(i int, no model.RunNo, m Mapped) error {
		if k >= len(want) || want[k].shard != i || want[k].no != no {
			return fmt.Errorf("run %d: %d:%d", k, i, no)
		}
		w := want[k].e
		l, _, _ := p.Lookup(i, no)
		if m.WorkflowID != w.WorkflowID || m.State != w.State || m.Gen != w.Gen || m.Shard != l.Shard || m.No != l.No || m.Renumbered != l.Renumbered {
			return fmt.Errorf("run %d:%d: %+v, want %+v at %+v", i, no, m, w, l)
		}
		k++
		return nil
	})
	if err == nil && k != len(want) {
		err = fmt.Errorf("listed %d runs of %d", k, len(want))
	}
	if err != nil {
		t.Fatal(err)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRunMapRefuses: past its allowance, out of order or past 32 bits, the
// compact map says errMapFull (the plan is then made through the spill
// maps), never a wrong answer.
func TestRunMapRefuses(t *testing.T) {
	e := &model.RunEntry{State: model.StateRunning, Gen: 1}
	// Every run costs at least its dst and generation: 6 bytes.
	const allowance = 256
	c := newRunMap(1, 1, allowance)
	var added int
	for no := model.RunNo(1); ; no++ {
		err := c.add(0, no, 0, e)
		if errors.Is(err, errMapFull) {
			break
		}
		if err != nil || added > allowance/6 {
			t.Fatalf("run %d in room for %d bytes: %v", no, allowance, err)
		}
		added++
	}
	c = newRunMap(1, 1, 1<<20)
	if err := c.add(0, 5, 0, e); err != nil {
		t.Fatal(err)
	}
	if err := c.add(0, 5, 0, e); !errors.Is(err, errMapFull) {
		t.Errorf("a repeated number: %v", err)
	}
	if err := c.add(0, math.MaxUint32+1, 0, e); !errors.Is(err, errMapFull) {
		t.Errorf("a number past 32 bits: %v", err)
	}
	if err := c.assign(&Plan{maxUsed: math.MaxUint32 - 1, NextRun: make([]model.RunNo, 1), ShardRuns: make([]int64, 1)}); !errors.Is(err, errMapFull) {
		t.Errorf("new numbers past 32 bits: %v", err)
	}
}

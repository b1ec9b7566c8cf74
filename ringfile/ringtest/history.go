// Package ringtest drives random histories of a namespace's placement
// policy through ringfile stores, for property tests: the same history on
// a ring file and on etcd must give the same answers, and every id minted
// along the way must resolve, for ever, to the cell its own epoch's ring
// names. It is test support: no command imports it.
//
// A history opens epochs from plans and from arbitrary rings whose shard
// sets grow, shrink or move (some shards dropped, others added), retires
// draining epochs, and mints ids all along, some by nodes still holding
// a placement from an older epoch. A ring whose set differs from the
// current one without the change being named must be refused by every
// store, leaving it as it was.
package ringtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/idcodec"
	"github.com/fusee-dev/fusee/ringfile"
)

// Run drives one random history of namespace ns on every store at once
// (each must be empty) and fails t at the first step where the stores
// disagree, a write that must succeed fails, or an id resolves to another
// cell than the one its epoch's ring names.
func Run(t *rapid.T, ns string, stores ...ringfile.Store) {
	h := &history{t: t, ns: ns, stores: stores, rings: map[int64]ringfile.Ring{}, clock: time.Unix(1700000000, 0)}
	h.genesis()
	for i := rapid.IntRange(1, 12).Draw(t, "steps"); i > 0; i-- {
		switch rapid.IntRange(0, 5).Draw(t, "action") {
		case 0:
			h.plan()
		case 1, 2:
			h.openArbitrary()
		case 3:
			h.retire()
		default:
			h.mint()
		}
		h.check()
	}
}

type minted struct {
	id    string
	cell  string
	epoch int64
	shard int
}

type history struct {
	t      *rapid.T
	ns     string
	stores []ringfile.Store
	p      *ringfile.Policy        // the policy every store holds
	rings  map[int64]ringfile.Ring // every epoch's ring as opened
	stale  []*idcodec.Placement    // placements nodes may still mint with
	owners []string                // the cell of each placement in stale
	minted []minted
	clock  time.Time
}

func (h *history) genesis() {
	n := rapid.IntRange(1, 40).Draw(h.t, "shards")
	cells := make([]string, rapid.IntRange(1, min(n, 4)).Draw(h.t, "cells"))
	for i := range cells {
		cells[i] = fmt.Sprintf("c%d", i)
	}
	p, err := ringfile.OpenEpoch(&ringfile.Policy{Namespace: h.ns, Current: ringfile.NoEpoch}, ringfile.EvenRing(n, cells), ringfile.ShardChange{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, st := range h.stores {
		if err := st.Create(context.Background(), p, ringfile.WriteOptions{ExpectRevision: 0}); err != nil {
			h.t.Fatalf("%s: create: %v", st.Name(), err)
		}
	}
	h.p = p
	h.learn()
}

// update applies change on every store, expecting the revision all hold;
// they must all succeed or all refuse alike. It reports whether they
// succeeded.
func (h *history) update(what string, change func(cur *ringfile.Policy) (*ringfile.Policy, error)) (bool, error) {
	var results []*ringfile.Policy
	var errs []error
	for _, st := range h.stores {
		next, err := st.Update(context.Background(), ringfile.WriteOptions{ExpectRevision: h.p.Revision}, change)
		results, errs = append(results, next), append(errs, err)
	}
	for i := 1; i < len(h.stores); i++ {
		if (errs[i] == nil) != (errs[0] == nil) {
			h.t.Fatalf("%s: %s answered %v, %s answered %v", what, h.stores[0].Name(), errs[0], h.stores[i].Name(), errs[i])
		}
	}
	if errs[0] != nil {
		return false, errs[0]
	}
	h.p = results[0]
	if _, ok := h.rings[h.p.Current]; !ok {
		h.learn()
	}
	return true, nil
}

// learn records the new current ring and gives each of its cells a
// placement; older placements stay in use (nodes re-point on heartbeat).
func (h *history) learn() {
	cur := h.p.CurrentEpoch()
	h.rings[cur.Number] = slices.Clone(cur.Ring)
	for _, c := range cur.Ring.Cells() {
		pl, err := h.p.Placement(c)
		if err != nil {
			h.t.Fatal(err)
		}
		h.stale, h.owners = append(h.stale, pl), append(h.owners, c)
	}
}

// plan opens a plan for a random goal, the shard goals among them.
func (h *history) plan() {
	cur := h.p.CurrentEpoch()
	cells := cur.Ring.Cells()
	g := ringfile.Goal{Kind: ringfile.GoalKind(rapid.IntRange(1, 5).Draw(h.t, "goal"))}
	switch g.Kind {
	case ringfile.GoalAddCell:
		g.Cell = fmt.Sprintf("c%d", rapid.IntRange(0, 6).Draw(h.t, "add-cell"))
	case ringfile.GoalRemoveCell:
		g.Cell = rapid.SampledFrom(cells).Draw(h.t, "remove-cell")
	case ringfile.GoalSplit:
		g.Cell, g.To = rapid.SampledFrom(cells).Draw(h.t, "split"), fmt.Sprintf("c%d", rapid.IntRange(0, 6).Draw(h.t, "split-to"))
	case ringfile.GoalShards:
		set := cur.ShardSet()
		g.RemoveShards = drawSubset(h.t, set, "plan-remove", len(set)-1)
		g.AddShards = drawNew(h.t, set, "plan-add")
	}
	res, err := ringfile.MakePlan(h.p, g)
	if err != nil {
		return // a refused goal writes nothing
	}
	if ok, err := h.update("open plan "+g.String(), func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		return ringfile.OpenPlan(cur, res.Plan)
	}); !ok {
		h.t.Fatalf("opening plan %s failed: %v", g, err)
	}
	if g.Kind == ringfile.GoalShards && ringfile.Moved(movesOnly(res.Moves)) != 0 {
		h.t.Fatalf("plan %s moved existing shards: %v", g, res.Moves)
	}
}

// openArbitrary opens a ring over a grown, shrunk or moved set, on random
// cells in a random order. Unnamed, a changed set must be refused by every
// store; named, it must open.
func (h *history) openArbitrary() {
	set := h.p.CurrentEpoch().ShardSet()
	ch := ringfile.ShardChange{Remove: drawSubset(h.t, set, "remove", len(set)-1), Add: drawNew(h.t, set, "add")}
	next, err := ch.Apply(set, h.p.Current)
	if err != nil {
		h.t.Fatal(err)
	}
	ring := make(ringfile.Ring, len(next))
	for i, sh := range next {
		ring[i] = ringfile.Slot{Shard: sh, Cell: fmt.Sprintf("c%d", rapid.IntRange(0, 5).Draw(h.t, "cell"))}
	}
	ring = rapid.Permutation(ring).Draw(h.t, "order")
	if !ch.IsZero() {
		ok, err := h.update("unnamed set change", func(cur *ringfile.Policy) (*ringfile.Policy, error) {
			return ringfile.OpenEpoch(cur, ring, ringfile.ShardChange{})
		})
		if ok || !errors.Is(err, ringfile.ErrShardSet) {
			h.t.Fatalf("a ring over %s opened in place of %s without naming the change (%v)",
				ringfile.FormatShardSet(next), ringfile.FormatShardSet(set), err)
		}
	}
	same := h.p.CurrentEpoch().Ring.SamePlacement(ring)
	ok, err := h.update("open-epoch", func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		return ringfile.OpenEpoch(cur, ring, ch)
	})
	if ok == same {
		h.t.Fatalf("opening a ring over %s (change %+v): ok=%v, unchanged=%v: %v", ringfile.FormatShardSet(next), ch, ok, same, err)
	}
}

func (h *history) retire() {
	draining := h.p.Draining()
	if len(draining) == 0 {
		return
	}
	e := rapid.SampledFrom(draining).Draw(h.t, "retire")
	if ok, err := h.update("retire", func(cur *ringfile.Policy) (*ringfile.Policy, error) { return ringfile.Retire(cur, e) }); !ok {
		h.t.Fatalf("retiring draining epoch %d failed: %v", e, err)
	}
}

func (h *history) mint() {
	i := rapid.IntRange(0, len(h.stale)-1).Draw(h.t, "placement")
	pl, cell := h.stale[i], h.owners[i]
	h.clock = h.clock.Add(time.Millisecond)
	m := idcodec.NewMinter(pl, rand.New(rand.NewSource(int64(len(h.minted)))), func() time.Time { return h.clock })
	for k := rapid.IntRange(1, 5).Draw(h.t, "count"); k > 0; k-- {
		id, err := m.Mint()
		if err != nil {
			h.t.Fatal(err)
		}
		parsed := idcodec.Parse(id)
		h.minted = append(h.minted, minted{id: id, cell: cell, epoch: parsed.Epoch, shard: int(parsed.Shard)})
	}
}

// check re-reads every store: each holds the same valid policy, no ring
// has changed, and every minted id resolves to the cell its epoch's ring
// names, which is the cell that minted it; an id of a shard its epoch's
// ring lacks fails closed.
func (h *history) check() {
	var first []byte
	for i, st := range h.stores {
		p, err := ringfile.LoadValidFrom(context.Background(), st)
		if err != nil {
			h.t.Fatalf("%s: %v", st.Name(), err)
		}
		text := ringfile.Format(p)
		if i == 0 {
			first = text
		} else if string(text) != string(first) {
			h.t.Fatalf("%s and %s hold different policies:\n%s\n%s", h.stores[0].Name(), st.Name(), first, text)
		}
		h.checkPolicy(p)
	}
}

func (h *history) checkPolicy(p *ringfile.Policy) {
	for _, e := range p.Epochs {
		if !e.Ring.SamePlacement(h.rings[e.Number]) {
			h.t.Fatalf("epoch %d's ring changed", e.Number)
		}
		if !slices.Equal(e.ShardSet(), e.Ring.ShardSet()) {
			h.t.Fatalf("epoch %d's set %v is not its ring's", e.Number, e.ShardSet())
		}
	}
	for _, m := range h.minted {
		owners := h.rings[m.epoch].Owners(m.shard)
		r, err := p.Resolve(m.id)
		if err != nil || len(owners) != 1 || r.Cell != owners[0].Cell || r.Cell != m.cell {
			h.t.Fatalf("%s minted by %s in epoch %d resolves to %q (%v); its ring names %v", m.id, m.cell, m.epoch, r.Cell, err, owners)
		}
	}
	for _, e := range p.Epochs {
		for _, sh := range []int{0, 7, 41, ringfile.MaxShards - 1} {
			if _, in := slices.BinarySearch(e.ShardSet(), sh); in {
				continue
			}
			id := fmt.Sprintf("%s.e%d.s%d.01ARZ3NDEKTSV4RRFFQ69G5FAV", p.Namespace, e.Number, sh)
			if _, err := p.Resolve(id); !errors.Is(err, ringfile.ErrUnplaced) {
				h.t.Fatalf("%s names a shard epoch %d lacks, and resolves (%v)", id, e.Number, err)
			}
		}
	}
}

// drawSubset draws up to most members of set.
func drawSubset(t *rapid.T, set []int, label string, most int) []int {
	if most <= 0 || !rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	k := rapid.IntRange(1, most).Draw(t, label+" count")
	picked := rapid.Permutation(set).Draw(t, label)[:k]
	slices.Sort(picked)
	return picked
}

// drawNew draws a few shards not in set, below 48.
func drawNew(t *rapid.T, set []int, label string) []int {
	if !rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	var out []int
	for k := rapid.IntRange(1, 6).Draw(t, label+" count"); k > 0; k-- {
		sh := rapid.IntRange(0, 47).Draw(t, label)
		if _, in := slices.BinarySearch(set, sh); !in && !slices.Contains(out, sh) {
			out = append(out, sh)
		}
	}
	slices.Sort(out)
	return out
}

// movesOnly keeps the runs that change cell (not those added or removed).
func movesOnly(moves []ringfile.Move) []ringfile.Move {
	var out []ringfile.Move
	for _, m := range moves {
		if m.From != "" && m.To != "" {
			out = append(out, m)
		}
	}
	return out
}

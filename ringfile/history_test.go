package ringfile

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/idcodec"
	"pgregory.net/rapid"
)

// history drives one random life of a namespace through the ring file on
// disk: epochs opened by plans or by arbitrary rings, epochs retired, and
// ids minted all along, some by nodes that have not yet seen the latest
// epoch. Every step goes through Update, so CheckTransition and Validate
// guard it as they guard the commands.
type history struct {
	t      *rapid.T
	path   string
	p      *Policy
	rings  map[int64]Ring       // every epoch's ring as it was opened
	stale  []*idcodec.Placement // placements nodes may still be minting with
	minted []minted
	clock  time.Time
}

// TestEveryMintedIDResolvesForeverToItsMinter is the model's promise: an id
// minted at any point, by a node with any placement it was ever given,
// resolves to the cell that minted it, through any later history.
func TestEveryMintedIDResolvesForeverToItsMinter(t *testing.T) {
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		h := newHistory(rt, filepath.Join(dir, fmt.Sprintf("h%d.ring", run)))
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 0:
				h.planAndOpen()
			case 1:
				h.openArbitrary()
			case 2:
				h.retire()
			default:
				h.mint()
			}
			h.check()
		}
	})
}

func newHistory(t *rapid.T, path string) *history {
	n := rapid.IntRange(1, 40).Draw(t, "shards")
	k := rapid.IntRange(1, min(n, 4)).Draw(t, "cells")
	cells := make([]string, k)
	for i := range cells {
		cells[i] = fmt.Sprintf("c%d", i)
	}
	p, err := OpenEpoch(&Policy{Namespace: "ns", Current: NoEpoch}, EvenRing(n, cells), ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Create(path, p, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h := &history{t: t, path: path, p: p, rings: map[int64]Ring{0: p.Epoch(0).Ring}, clock: time.Unix(1700000000, 0)}
	h.learnPlacements()
	return h
}

// update applies a change through the file, as a command would.
func (h *history) update(change func(cur *Policy) (*Policy, error)) bool {
	next, err := Update(h.path, WriteOptions{ExpectRevision: h.p.Revision}, change)
	if err != nil {
		return false
	}
	h.p = next
	if _, ok := h.rings[next.Current]; !ok {
		h.rings[next.Current] = next.CurrentEpoch().Ring
		h.learnPlacements()
	}
	return true
}

// learnPlacements gives every cell of the current ring its placement;
// older placements stay in use (nodes re-point on their next heartbeat).
func (h *history) learnPlacements() {
	for _, c := range h.p.CurrentEpoch().Ring.Cells() {
		pl, err := h.p.Placement(c)
		if err != nil {
			h.t.Fatal(err)
		}
		h.stale = append(h.stale, pl)
	}
}

func (h *history) planAndOpen() {
	g := drawGoal(h.t, h.p)
	res, err := MakePlan(h.p, g)
	if err != nil {
		return
	}
	h.update(func(cur *Policy) (*Policy, error) { return OpenPlan(cur, res.Plan) })
}

func (h *history) openArbitrary() {
	ring := make(Ring, len(h.p.CurrentEpoch().Ring))
	for sh := range ring {
		ring[sh] = Slot{Shard: sh, Cell: fmt.Sprintf("c%d", rapid.IntRange(0, 5).Draw(h.t, "cell"))}
	}
	ring = rapid.Permutation(ring).Draw(h.t, "order")
	h.update(func(cur *Policy) (*Policy, error) { return OpenEpoch(cur, ring, ShardChange{}) })
}

func (h *history) retire() {
	draining := h.p.Draining()
	if len(draining) == 0 {
		return
	}
	e := rapid.SampledFrom(draining).Draw(h.t, "retire")
	if !h.update(func(cur *Policy) (*Policy, error) { return Retire(cur, e) }) {
		h.t.Fatalf("retiring draining epoch %d failed", e)
	}
}

func (h *history) mint() {
	pl := rapid.SampledFrom(h.stale).Draw(h.t, "placement")
	cell := h.cellOf(pl)
	h.clock = h.clock.Add(time.Millisecond)
	m := idcodec.NewMinter(pl, rand.New(rand.NewSource(int64(len(h.minted)))), func() time.Time { return h.clock })
	for i := rapid.IntRange(1, 5).Draw(h.t, "count"); i > 0; i-- {
		id, err := m.Mint()
		if err != nil {
			h.t.Fatal(err)
		}
		h.minted = append(h.minted, minted{id, cell})
	}
}

// cellOf finds which cell a placement belongs to, from the ids it makes.
func (h *history) cellOf(pl *idcodec.Placement) string {
	id, err := pl.Format("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	if err != nil {
		h.t.Fatal(err)
	}
	return idcodec.Parse(id).Cell
}

// check re-reads the file and asserts the model's invariants.
func (h *history) check() {
	p, err := LoadValid(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	open := 0
	for _, e := range p.Epochs {
		if !e.Ring.SamePlacement(h.rings[e.Number]) {
			h.t.Fatalf("epoch %d's ring changed", e.Number)
		}
		if e.Status == StatusOpen {
			open++
		}
	}
	if open != 1 || p.CurrentEpoch().Status != StatusOpen {
		h.t.Fatalf("%d open epochs, current %d", open, p.Current)
	}
	for _, m := range h.minted {
		r, err := p.Resolve(m.id)
		if err != nil || r.Cell != m.cell {
			h.t.Fatalf("%s minted by %s resolves to %q (%v)", m.id, m.cell, r.Cell, err)
		}
	}
}

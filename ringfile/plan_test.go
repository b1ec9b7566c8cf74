package ringfile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// drawPolicy draws a valid policy whose current ring places shards on
// random cells, in a random slot order.
func drawPolicy(t *rapid.T) *Policy {
	n := rapid.IntRange(1, 96).Draw(t, "shards")
	k := rapid.IntRange(1, min(n, 7)).Draw(t, "cells")
	ring := make(Ring, n)
	for sh := range ring {
		ring[sh] = Slot{Shard: sh, Cell: fmt.Sprintf("c%d", rapid.IntRange(0, k-1).Draw(t, "owner"))}
	}
	if rapid.Bool().Draw(t, "shuffle") {
		ring = rapid.Permutation(ring).Draw(t, "order")
	}
	p, err := OpenEpoch(&Policy{Namespace: "ns", Current: NoEpoch}, ring, ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func drawGoal(t *rapid.T, p *Policy) Goal {
	cells := p.CurrentEpoch().Ring.Cells()
	g := Goal{Kind: GoalKind(rapid.IntRange(1, 4).Draw(t, "kind"))}
	switch g.Kind {
	case GoalAddCell:
		g.Cell = "new"
	case GoalRemoveCell:
		g.Cell = rapid.SampledFrom(cells).Draw(t, "remove")
	case GoalSplit:
		g.Cell, g.To = rapid.SampledFrom(cells).Draw(t, "split"), "new"
		return g
	}
	if rapid.Bool().Draw(t, "weighted") {
		g.Weights = map[string]int{}
		for _, c := range append(slices.Clone(cells), "new") {
			if (c != g.Cell || g.Kind != GoalRemoveCell) && (c != "new" || g.Kind == GoalAddCell) {
				g.Weights[c] = rapid.IntRange(1, 5).Draw(t, "weight")
			}
		}
	}
	return g
}

// TestPlanMovesExactlyTheLowerBound: for any ring and goal, the plan meets
// each cell's target (within one shard of its weighted share) and moves
// exactly sum(max(0, before-target)) shards, which no ring with those
// counts can beat: every shard above a cell's target must leave it.
func TestPlanMovesExactlyTheLowerBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPolicy(t)
		g := drawGoal(t, p)
		res, err := MakePlan(p, g)
		if err != nil {
			checkRefusal(t, p, g, err)
			return
		}
		before := p.CurrentEpoch().Ring.Counts()
		lower, weightSum := 0, 0
		for _, c := range res.Changes {
			lower += max(0, c.Before-c.Target)
			weightSum += c.Weight
			if c.After != c.Target {
				t.Fatalf("cell %s ends with %d shards, target %d", c.Cell, c.After, c.Target)
			}
		}
		if moved := Moved(res.Moves); moved != lower {
			t.Fatalf("moved %d shards, lower bound %d", moved, lower)
		}
		if g.Kind == GoalSplit {
			checkSplit(t, before, res, g)
			return
		}
		for _, c := range res.Changes {
			// |target - n*w/W| < 1, in integers: |target*W - n*w| < W.
			if d := c.Target*weightSum - len(p.CurrentEpoch().Ring)*c.Weight; d <= -weightSum || d >= weightSum {
				t.Fatalf("cell %s target %d is a shard or more off its share %d*%d/%d", c.Cell, c.Target, len(p.CurrentEpoch().Ring), c.Weight, weightSum)
			}
		}
		next, err := OpenPlan(p, res.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if next.Current != p.Current+1 || !slices.Equal(next.Draining(), res.Draining) {
			t.Fatalf("opened %d, draining %v (plan said %v)", next.Current, next.Draining(), res.Draining)
		}
	})
}

func checkSplit(t *rapid.T, before map[string]int, res *PlanResult, g Goal) {
	after := res.Plan.Ring.Counts()
	n := before[g.Cell]
	if after[g.Cell] != n-n/2 || after[g.To] != n/2 {
		t.Fatalf("split %d shards into %d and %d", n, after[g.Cell], after[g.To])
	}
	for _, m := range res.Moves {
		if m.From != g.Cell || m.To != g.To {
			t.Fatalf("split moved %+v", m)
		}
	}
}

// checkRefusal accepts only the refusals the planner documents, and only
// when their condition holds.
func checkRefusal(t *rapid.T, p *Policy, g Goal, err error) {
	msg := err.Error()
	cur := p.CurrentEpoch().Ring
	switch {
	case errors.Is(err, ErrNothingToMove):
	case strings.Contains(msg, "would own no shard"):
	case strings.Contains(msg, "only cell"):
		if len(cur.Cells()) != 1 {
			t.Fatalf("refused as only cell: %v", err)
		}
	case strings.Contains(msg, "cannot be split"):
		if cur.Counts()[g.Cell] >= 2 {
			t.Fatalf("refused a split of %d shards", cur.Counts()[g.Cell])
		}
	case strings.Contains(msg, "has only"):
		if len(cur.Cells())+1 <= len(cur) {
			t.Fatalf("refused for too many cells: %v", err)
		}
	default:
		t.Fatalf("unexpected refusal: %v", err)
	}
}

func TestPlanSplitHandsOverTheUpperHalf(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA")
	res, err := MakePlan(p, Goal{Kind: GoalSplit, Cell: "cellA", To: "cellB"})
	if err != nil {
		t.Fatal(err)
	}
	want := Ring{{Shard: 0, Cell: "cellA"}, {Shard: 1, Cell: "cellA"}, {Shard: 2, Cell: "cellB"}, {Shard: 3, Cell: "cellB"}}
	if !res.Plan.Ring.SamePlacement(want) {
		t.Errorf("split ring %+v", res.Plan.Ring)
	}
	if len(res.Moves) != 1 || res.Moves[0] != (Move{First: 2, Last: 3, From: "cellA", To: "cellB"}) {
		t.Errorf("moves %+v", res.Moves)
	}
	if !slices.Equal(res.Draining, []int64{0}) {
		t.Errorf("draining %v", res.Draining)
	}
}

// The golden file's epochs are a split and an added cell: the planner must
// reproduce them.
func TestPlanReproducesTheGoldenHistory(t *testing.T) {
	golden := mustParse(t, string(readFile(t, goldenRing)))
	p := newPolicy(t, "orders", 1024, "cellA")
	steps := []Goal{
		{Kind: GoalSplit, Cell: "cellA", To: "cellB"},
		{Kind: GoalAddCell, Cell: "cellC", Region: "eu-west"},
	}
	for i, g := range steps {
		res, err := MakePlan(p, g)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = OpenPlan(p, res.Plan); err != nil {
			t.Fatal(err)
		}
		if !p.CurrentEpoch().Ring.SamePlacement(golden.Epoch(int64(i + 1)).Ring) {
			t.Errorf("step %d (%s) differs from the golden epoch %d", i, g, i+1)
		}
	}
}

func TestPlanRefusals(t *testing.T) {
	p := newPolicy(t, "orders", 3, "a", "b", "c")
	cases := []struct {
		goal Goal
		want string
	}{
		{Goal{Kind: GoalAddCell, Cell: "d"}, "needs 4 cells but epoch 0 has only 3 shards"},
		{Goal{Kind: GoalAddCell, Cell: "a"}, "already owns shards"},
		{Goal{Kind: GoalRemoveCell, Cell: "z"}, "owns no shard in epoch 0: nothing to remove"},
		{Goal{Kind: GoalRebalance}, "no shard would move"},
		{Goal{Kind: GoalRebalance, Weights: map[string]int{"a": 8}}, "cell c would own no shard"},
		{Goal{Kind: GoalRebalance, Weights: map[string]int{"q": 2}}, "weight for q, which is not a cell"},
		{Goal{Kind: GoalAddCell, Cell: "bad.name"}, "cell id \"bad.name\""},
	}
	for _, c := range cases {
		if _, err := MakePlan(p, c.goal); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.goal, err, c.want)
		}
	}
	four := newPolicy(t, "orders", 4, "a", "b", "c")
	if _, err := MakePlan(four, Goal{Kind: GoalSplit, Cell: "b", To: "d"}); err == nil || !strings.Contains(err.Error(), "owns 1 shard: it cannot be split") {
		t.Errorf("splitting a one-shard cell: %v", err)
	}
	solo := newPolicy(t, "orders", 3, "a")
	if _, err := MakePlan(solo, Goal{Kind: GoalRemoveCell, Cell: "a"}); err == nil || !strings.Contains(err.Error(), "only cell") {
		t.Errorf("removing the last cell: %v", err)
	}
}

func TestPlanFileRoundTripsAndIsBoundToItsRevision(t *testing.T) {
	p := newPolicy(t, "orders", 8, "a", "b")
	res, err := MakePlan(p, Goal{Kind: GoalAddCell, Cell: "c", Fingerprint: "db-c", Weights: map[string]int{"c": 2}})
	if err != nil {
		t.Fatal(err)
	}
	text := FormatPlan(res.Plan)
	back, err := ParsePlan("x.plan", text)
	if err != nil {
		t.Fatal(err)
	}
	if string(FormatPlan(back)) != string(text) {
		t.Errorf("plan does not round-trip:\n%s", text)
	}
	stale, _ := OpenEpoch(p, EvenRing(8, []string{"b", "a"}), ShardChange{})
	if _, err := OpenPlan(stale, back); !errors.Is(err, ErrConflict) {
		t.Errorf("plan opened on a moved file: %v", err)
	}
	next, err := OpenPlan(p, back)
	if err != nil {
		t.Fatal(err)
	}
	if next.Cells[len(next.Cells)-1] != (CellDecl{ID: "c", Fingerprint: "db-c"}) {
		t.Errorf("cells %+v", next.Cells)
	}
	_, err = ParsePlan("x.plan", []byte("fusee-ring-plan 1\nnamespace a\nbogus 1\nring\n  0 a\nshards 2\n"))
	wantErrContains(t, err, `x.plan:3: unknown key "bogus"`, `x.plan:6: "shards" after the ring`, "missing `base-revision` line")
}

func TestWeightedTargetsPreferFewerMoves(t *testing.T) {
	// 10 shards over 3 equal cells: one cell gets 4. It goes to the cell
	// that holds the most now, so fewer shards move.
	got := WeightedTargets(10, []string{"a", "b", "c"}, nil, map[string]int{"a": 1, "b": 1, "c": 8})
	if got["c"] != 4 || got["a"] != 3 || got["b"] != 3 {
		t.Errorf("targets %v", got)
	}
}

// TestPlanMovesTheMinimumOverEveryAdmissibleTarget checks the planner
// against an oracle that shares none of its code: on small rings it
// enumerates every admissible target assignment (each cell of the next
// ring within one shard of its weighted share, floor or ceiling of
// S*w/W, at least one shard, the counts summing to S; a removed cell gets
// none) and takes the fewest moves any of them needs, sum over cells of
// max(0, current-target). The plan must end on an admissible assignment
// and move exactly that minimum; it may refuse only when no assignment is
// admissible (or the minimum is zero).
func TestPlanMovesTheMinimumOverEveryAdmissibleTarget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "shards")
		kind := GoalKind(rapid.SampledFrom([]int{int(GoalAddCell), int(GoalRemoveCell), int(GoalRebalance)}).Draw(t, "kind"))
		maxCells := 4
		if kind == GoalAddCell {
			maxCells = 3
		}
		k := rapid.IntRange(1, min(n, maxCells)).Draw(t, "cells")
		ring := make(Ring, n)
		for sh := range ring {
			ring[sh] = Slot{Shard: sh, Cell: fmt.Sprintf("c%d", rapid.IntRange(0, k-1).Draw(t, "owner"))}
		}
		ring = rapid.Permutation(ring).Draw(t, "order")
		p, err := OpenEpoch(&Policy{Namespace: "ns", Current: NoEpoch}, ring, ShardChange{})
		if err != nil {
			t.Fatal(err)
		}
		current := map[string]int{}
		for _, s := range ring {
			current[s.Cell]++
		}
		var next []string // the oracle's own list of the next ring's cells
		for c := range current {
			next = append(next, c)
		}
		slices.Sort(next)
		g := Goal{Kind: kind}
		switch kind {
		case GoalAddCell:
			g.Cell = "new"
			next = append(next, "new")
		case GoalRemoveCell:
			g.Cell = rapid.SampledFrom(next).Draw(t, "remove")
			next = slices.DeleteFunc(next, func(c string) bool { return c == g.Cell })
		}
		weight := map[string]int{}
		weighted := rapid.Bool().Draw(t, "weighted")
		for _, c := range next {
			weight[c] = 1
			if weighted {
				weight[c] = rapid.IntRange(1, 5).Draw(t, "weight")
			}
		}
		if weighted {
			g.Weights = weight
		}

		// The oracle: enumerate every admissible assignment.
		total := 0
		for _, c := range next {
			total += weight[c]
		}
		lo, hi := map[string]int{}, map[string]int{}
		for _, c := range next {
			lo[c] = max(1, n*weight[c]/total)
			hi[c] = (n*weight[c] + total - 1) / total
		}
		best, admissible := -1, 0
		target := map[string]int{}
		var walk func(i, left int)
		walk = func(i, left int) {
			if i == len(next) {
				if left != 0 {
					return
				}
				admissible++
				moves := 0
				for c, have := range current {
					moves += max(0, have-target[c]) // a removed cell's target is 0
				}
				if best < 0 || moves < best {
					best = moves
				}
				return
			}
			c := next[i]
			for x := lo[c]; x <= hi[c] && x <= left; x++ {
				target[c] = x
				walk(i+1, left-x)
			}
			delete(target, c)
		}
		walk(0, n)

		res, err := MakePlan(p, g)
		if err != nil {
			switch {
			case len(next) == 0:
				if !strings.Contains(err.Error(), "only cell") {
					t.Fatalf("removing the last cell: %v", err)
				}
			case admissible == 0:
				if !strings.Contains(err.Error(), "would own no shard") && !strings.Contains(err.Error(), "has only") {
					t.Fatalf("no admissible assignment, refused with %v", err)
				}
			case best == 0:
				if !errors.Is(err, ErrNothingToMove) {
					t.Fatalf("the goal is met, refused with %v", err)
				}
			default:
				t.Fatalf("refused although %d admissible assignments exist (fewest moves %d): %v", admissible, best, err)
			}
			return
		}
		if admissible == 0 {
			t.Fatalf("planned although no assignment is admissible: %+v", res.Plan.Ring)
		}
		after := map[string]int{}
		for _, s := range res.Plan.Ring {
			after[s.Cell]++
		}
		for c, x := range after {
			if x < lo[c] || x > hi[c] {
				t.Fatalf("cell %s ends with %d shards, admissible %d..%d (weights %v)", c, x, lo[c], hi[c], weight)
			}
		}
		for _, c := range next {
			if after[c] == 0 {
				t.Fatalf("cell %s of the next ring ends with no shard", c)
			}
		}
		moved := 0
		byShard := map[int]string{}
		for _, s := range ring {
			byShard[s.Shard] = s.Cell
		}
		for _, s := range res.Plan.Ring {
			if byShard[s.Shard] != s.Cell {
				moved++
			}
		}
		if moved != best {
			t.Fatalf("moved %d shards; the fewest over %d admissible assignments is %d (current %v, weights %v, after %v)", moved, admissible, best, current, weight, after)
		}
	})
}

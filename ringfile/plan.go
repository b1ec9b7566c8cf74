package ringfile

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// GoalKind is what a plan is for.
type GoalKind uint8

const (
	GoalAddCell GoalKind = iota + 1
	GoalRemoveCell
	GoalSplit
	GoalRebalance
	// GoalShards adds and removes shards: added ones are dealt to the
	// cells with the fewest, removed ones leave; no other shard moves.
	GoalShards
)

// Goal says what the next ring should achieve.
type Goal struct {
	Kind GoalKind
	// Cell is the cell added or removed, or the cell split.
	Cell string
	// To is the new cell a split hands half of Cell's shards to.
	To string
	// Weights give cells a share proportional to their weight; a cell not
	// named weighs 1. Not used by a split.
	Weights map[string]int
	// Fingerprint and Region describe a cell the plan adds (add-cell, or
	// the new cell of a split): its storage fingerprint, its slots' region.
	Fingerprint string
	Region      string
	// AddShards and RemoveShards are GoalShards' change to the set.
	AddShards, RemoveShards []int
}

// String is the goal as the plan file records it.
func (g Goal) String() string {
	var s string
	switch g.Kind {
	case GoalAddCell:
		s = "add-cell " + g.Cell
	case GoalRemoveCell:
		s = "remove-cell " + g.Cell
	case GoalSplit:
		s = "split " + g.Cell + ":" + g.To
	case GoalRebalance:
		s = "rebalance"
	case GoalShards:
		var parts []string
		if len(g.AddShards) > 0 {
			parts = append(parts, "add-shards "+strings.Join(ShardRanges(g.AddShards), ","))
		}
		if len(g.RemoveShards) > 0 {
			parts = append(parts, "remove-shards "+strings.Join(ShardRanges(g.RemoveShards), ","))
		}
		s = strings.Join(parts, " ")
	}
	if len(g.Weights) > 0 {
		s += " weights=" + FormatWeights(g.Weights)
	}
	return s
}

// FormatWeights writes weights sorted by cell: "a=2,b=1".
func FormatWeights(w map[string]int) string {
	cells := make([]string, 0, len(w))
	for c := range w {
		cells = append(cells, c)
	}
	sort.Strings(cells)
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprintf("%s=%d", c, w[c])
	}
	return strings.Join(parts, ",")
}

// Plan is a computed next ring, tied to the revision it was computed from:
// opening it against any other revision is a conflict.
type Plan struct {
	Namespace    string
	BaseRevision int64
	BaseEpoch    int64
	Goal         string
	Declare      []CellDecl  // cells the plan introduces
	Change       ShardChange // shards the plan adds and removes
	Ring         Ring
}

// CellChange is one cell's share before and after a plan.
type CellChange struct {
	Cell   string `json:"cell"`
	Before int    `json:"before"`
	After  int    `json:"after"`
	Target int    `json:"target"`
	Weight int    `json:"weight"`
}

// Move is a run of consecutive shards that change cell.
type Move struct {
	First int    `json:"first"`
	Last  int    `json:"last"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Count is how many shards the move covers.
func (m Move) Count() int { return m.Last - m.First + 1 }

// Diff lists the shards whose cell differs between two rings, as runs of
// consecutive shards with the same from and to. A shard missing from one
// side shows an empty cell there.
func Diff(from, to Ring) []Move {
	owner := func(r Ring) map[int]string {
		m := map[int]string{}
		for _, s := range r {
			m[s.Shard] = s.Cell
		}
		return m
	}
	a, b := owner(from), owner(to)
	var shards []int
	for sh := range a {
		shards = append(shards, sh)
	}
	for sh := range b {
		if _, ok := a[sh]; !ok {
			shards = append(shards, sh)
		}
	}
	sort.Ints(shards)
	var moves []Move
	for _, sh := range shards {
		if a[sh] == b[sh] {
			continue
		}
		if k := len(moves) - 1; k >= 0 && moves[k].Last == sh-1 && moves[k].From == a[sh] && moves[k].To == b[sh] {
			moves[k].Last = sh
			continue
		}
		moves = append(moves, Move{First: sh, Last: sh, From: a[sh], To: b[sh]})
	}
	return moves
}

// Moved counts the shards in moves.
func Moved(moves []Move) int {
	n := 0
	for _, m := range moves {
		n += m.Count()
	}
	return n
}

// ErrNothingToMove: the goal is already met; an epoch would be needless.
var ErrNothingToMove = errors.New("the current ring already meets the goal: no shard would move, so no epoch is needed")

// PlanResult is a plan with what an operator reviews before opening it.
type PlanResult struct {
	Plan     *Plan
	Moves    []Move
	Changes  []CellChange
	Draining []int64 // the epochs that will be draining once it is opened
}

// MakePlan computes the next ring for a goal from the current epoch's ring,
// moving the fewest shards: each cell gets an integer target (its weighted
// share rounded as WeightedTargets does, to need the fewest moves; for a split, the two halves of the split
// cell), keeps its lowest-numbered shards up to its target, and only the
// shards above target move, to the cells below theirs. So the number moved
// is exactly the lower bound, the sum over cells of max(0, before-target).
// It refuses a plan that leaves a kept cell with no shard, needs more cells
// than shards, or moves nothing. GoalShards instead changes the shard set
// and moves no shard (see changeShards).
func MakePlan(p *Policy, g Goal) (*PlanResult, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	cur := p.CurrentEpoch()
	if cur == nil {
		return nil, fmt.Errorf("%w: there is no current ring to plan from; open the first epoch with explicit slots", ErrNotReady)
	}
	var (
		ring    Ring
		targets map[string]int
		change  ShardChange
		err     error
	)
	if g.Kind == GoalShards {
		change = ShardChange{Add: g.AddShards, Remove: g.RemoveShards}
		if ring, err = changeShards(cur, change); err != nil {
			return nil, err
		}
		targets = ring.Counts()
	} else {
		n := len(cur.ShardSet())
		var cells []string
		if cells, err = goalCells(cur, g); err != nil {
			return nil, err
		}
		if len(cells) > n {
			return nil, fmt.Errorf("the goal needs %d cells but epoch %d has only %d shards: a cell needs at least one shard (add shards with --add-shards first)", len(cells), cur.Number, n)
		}
		if targets, err = goalTargets(n, cur.Ring, cells, g); err != nil {
			return nil, err
		}
		ring = reassign(cur.Ring, cells, targets, g)
	}
	moves := Diff(cur.Ring, ring)
	if len(moves) == 0 {
		return nil, ErrNothingToMove
	}
	plan := &Plan{Namespace: p.Namespace, BaseRevision: p.Revision,
		BaseEpoch: p.Current, Goal: g.String(), Change: change, Ring: ring}
	if added := addedCell(g); added != "" {
		plan.Declare = []CellDecl{{ID: added, Fingerprint: g.Fingerprint}}
	}
	next, err := OpenEpoch(p, ring, change, plan.Declare...)
	if err != nil {
		return nil, err
	}
	return &PlanResult{Plan: plan, Moves: moves, Changes: changes(cur.Ring, ring, targets, g), Draining: next.Draining()}, nil
}

// changeShards is GoalShards' ring: the current ring without the removed
// shards, then each added shard, ascending, dealt to the cell that has the
// fewest shards at that point (ties to the earlier cell in ring order),
// with that cell's region. No other shard moves. It refuses a change that
// would leave a cell of the ring with no shard.
func changeShards(cur *Epoch, ch ShardChange) (Ring, error) {
	if ch.IsZero() {
		return nil, errors.New("no shard to add or remove")
	}
	if _, err := ch.Apply(cur.ShardSet(), cur.Number); err != nil {
		return nil, err
	}
	for _, sh := range ch.Add {
		if sh >= MaxShards {
			return nil, fmt.Errorf("--add-shards names shard %d, outside 0..%d", sh, MaxShards-1)
		}
	}
	cells := cur.Ring.Cells()
	region := map[string]string{}
	for _, s := range cur.Ring {
		if _, ok := region[s.Cell]; !ok {
			region[s.Cell] = s.Region
		}
	}
	ring := slices.DeleteFunc(slices.Clone(cur.Ring), func(s Slot) bool { return slices.Contains(ch.Remove, s.Shard) })
	counts := ring.Counts()
	var emptied []string
	for _, c := range cells {
		if counts[c] == 0 {
			emptied = append(emptied, c)
		}
	}
	for _, sh := range ch.Add {
		best := cells[0]
		for _, c := range cells[1:] {
			if counts[c] < counts[best] {
				best = c
			}
		}
		counts[best]++
		ring = append(ring, Slot{Shard: sh, Cell: best, Region: region[best]})
	}
	for _, c := range emptied {
		if counts[c] == 0 {
			return nil, fmt.Errorf("removing %s would leave cell %s with no shard (a cell leaves with --remove-cell)", shardWords(ch.Remove), c)
		}
	}
	for i := range ring {
		ring[i].Line = 0
	}
	slices.SortStableFunc(ring, func(a, b Slot) int { return a.Shard - b.Shard })
	return ring, nil
}

// addedCell is the cell a goal introduces, if any.
func addedCell(g Goal) string {
	switch g.Kind {
	case GoalAddCell:
		return g.Cell
	case GoalSplit:
		return g.To
	}
	return ""
}

// goalCells lists the cells of the next ring: the current ring's cells in
// order of appearance, with the goal's cell added or removed.
func goalCells(cur *Epoch, g Goal) ([]string, error) {
	base := cur.Ring.Cells()
	has := func(c string) bool { return slices.Contains(base, c) }
	var cells []string
	switch g.Kind {
	case GoalAddCell:
		if has(g.Cell) {
			return nil, fmt.Errorf("cell %s already owns shards in epoch %d (use --rebalance to change its share)", g.Cell, cur.Number)
		}
		cells = append(slices.Clone(base), g.Cell)
	case GoalRemoveCell:
		if !has(g.Cell) {
			return nil, fmt.Errorf("cell %s owns no shard in epoch %d: nothing to remove", g.Cell, cur.Number)
		}
		cells = slices.DeleteFunc(slices.Clone(base), func(c string) bool { return c == g.Cell })
		if len(cells) == 0 {
			return nil, fmt.Errorf("cell %s is the only cell of epoch %d: removing it would leave no cell", g.Cell, cur.Number)
		}
	case GoalSplit:
		switch {
		case !has(g.Cell):
			return nil, fmt.Errorf("cell %s owns no shard in epoch %d: nothing to split", g.Cell, cur.Number)
		case g.Cell == g.To || has(g.To):
			return nil, fmt.Errorf("split %s:%s: the second cell must be new (it already owns shards in epoch %d)", g.Cell, g.To, cur.Number)
		case len(g.Weights) > 0:
			return nil, fmt.Errorf("split hands over exactly half a cell's shards: weights do not apply")
		}
		cells = append(slices.Clone(base), g.To)
	case GoalRebalance:
		cells = base
	default:
		return nil, fmt.Errorf("no goal given")
	}
	if added := addedCell(g); !validName(added) && added != "" {
		return nil, fmt.Errorf("cell id %q: want %s", added, nameRule)
	}
	for c, w := range g.Weights {
		if !slices.Contains(cells, c) {
			return nil, fmt.Errorf("weight for %s, which is not a cell of the next ring", c)
		}
		if w < 1 {
			return nil, fmt.Errorf("weight %s=%d: weights are whole numbers of at least 1 (remove a cell with --remove-cell)", c, w)
		}
	}
	return cells, nil
}

// goalTargets gives each cell of the next ring its number of shards.
func goalTargets(n int, ring Ring, cells []string, g Goal) (map[string]int, error) {
	counts := ring.Counts()
	if g.Kind == GoalSplit {
		have := counts[g.Cell]
		if have < 2 {
			return nil, fmt.Errorf("cell %s owns %d shard: it cannot be split", g.Cell, have)
		}
		targets := counts
		targets[g.Cell], targets[g.To] = have-have/2, have/2
		return targets, nil
	}
	targets := WeightedTargets(n, cells, g.Weights, counts)
	for _, c := range cells {
		if targets[c] == 0 {
			return nil, fmt.Errorf("cell %s would own no shard: its weighted share of %d shards rounds to zero (raise its weight or remove it)", c, n)
		}
	}
	return targets, nil
}

// WeightedTargets splits n shards among cells in proportion to their
// weights (1 when not given): each cell gets the floor of its exact share,
// and the shards left over go one each to cells whose share is not whole,
// first to cells whose floor is zero (a kept cell needs a shard), then to
// cells that hold more than their floor now (each such extra saves a move),
// then by largest remainder, then to the cell that holds more now, then to
// the earlier cell. Every target is within one shard of the exact weighted
// share, and no such assignment needs fewer moves.
func WeightedTargets(n int, cells []string, weights map[string]int, current map[string]int) map[string]int {
	w := func(c string) int {
		if x, ok := weights[c]; ok {
			return x
		}
		return 1
	}
	total := 0
	for _, c := range cells {
		total += w(c)
	}
	targets := map[string]int{}
	rem := map[string]int{}
	left := n
	for _, c := range cells {
		targets[c] = n * w(c) / total
		rem[c] = n * w(c) % total
		left -= targets[c]
	}
	order := slices.Clone(cells)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if za, zb := targets[a] == 0 && rem[a] > 0, targets[b] == 0 && rem[b] > 0; za != zb {
			return za
		}
		if sa, sb := rem[a] > 0 && current[a] > targets[a], rem[b] > 0 && current[b] > targets[b]; sa != sb {
			return sa
		}
		if rem[a] != rem[b] {
			return rem[a] > rem[b]
		}
		return current[a] > current[b]
	})
	for _, c := range order[:left] {
		targets[c]++
	}
	return targets
}

// reassign builds the next ring in shard order: every cell keeps its
// lowest-numbered shards up to its target; the rest are freed and handed,
// in ascending order, to the cells below target, in cell order. Kept
// shards keep their region; a moved shard takes its new cell's region.
func reassign(base Ring, cells []string, targets map[string]int, g Goal) Ring {
	sorted := slices.Clone(base)
	slices.SortStableFunc(sorted, func(a, b Slot) int { return a.Shard - b.Shard })
	region := map[string]string{}
	for _, s := range sorted {
		if _, ok := region[s.Cell]; !ok {
			region[s.Cell] = s.Region
		}
	}
	if added := addedCell(g); added != "" {
		region[added] = g.Region
	}
	kept := map[string]int{}
	next := make(Ring, 0, len(sorted))
	var freed []int
	for _, s := range sorted {
		if kept[s.Cell] < targets[s.Cell] {
			kept[s.Cell]++
			next = append(next, Slot{Shard: s.Shard, Cell: s.Cell, Region: s.Region})
			continue
		}
		freed = append(freed, s.Shard)
	}
	for _, c := range cells {
		for ; kept[c] < targets[c] && len(freed) > 0; kept[c]++ {
			next = append(next, Slot{Shard: freed[0], Cell: c, Region: region[c]})
			freed = freed[1:]
		}
	}
	slices.SortStableFunc(next, func(a, b Slot) int { return a.Shard - b.Shard })
	return next
}

// CompareRings tabulates every cell of either ring, in order of first
// appearance (from's cells first): its shards before and after.
func CompareRings(from, to Ring) []CellChange {
	before, after := from.Counts(), to.Counts()
	cells := from.Cells()
	for _, c := range to.Cells() {
		if before[c] == 0 {
			cells = append(cells, c)
		}
	}
	out := make([]CellChange, len(cells))
	for i, c := range cells {
		out[i] = CellChange{Cell: c, Before: before[c], After: after[c]}
	}
	return out
}

// changes is CompareRings with each cell's target and weight.
func changes(from, to Ring, targets map[string]int, g Goal) []CellChange {
	out := CompareRings(from, to)
	for i := range out {
		c := &out[i]
		c.Target = targets[c.Cell]
		if c.Target > 0 && g.Kind != GoalSplit && g.Kind != GoalShards {
			c.Weight = 1
			if x, ok := g.Weights[c.Cell]; ok {
				c.Weight = x
			}
		}
	}
	return out
}

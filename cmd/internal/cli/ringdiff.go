package cli

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/fusee-dev/fusee/ringfile"
)

// A ring change drawn as a before/after diff: the two strips one above the
// other, aligned column for column, with the moved columns marked, then
// the rings as shard ranges in diff form (an unchanged range once, a
// changed one as a - line with its old cell and a + line with its new
// one) and each cell's count before and after.

var (
	styleDel = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleAdd = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
)

// ringPair is a shard's owner before and after (key indexes or owner
// codes).
type ringPair struct{ before, after int }

// ringPairs gives each shard a code for its (before, after) pair: one
// strip over the codes lays both rings out in the same columns.
func ringPairs(before, after []int) (codes []int, pairs []ringPair) {
	index := map[ringPair]int{}
	codes = make([]int, len(before))
	for s := range before {
		p := ringPair{before[s], after[s]}
		i, ok := index[p]
		if !ok {
			i = len(pairs)
			index[p] = i
			pairs = append(pairs, p)
		}
		codes[s] = i
	}
	return codes, pairs
}

// ringDiffStrips are the three rows of a before/after strip: before,
// after, and '^' under every column with a shard that changes cell.
func ringDiffStrips(before, after []int, width int, styled bool) (segs []ringStripSeg, pairs []ringPair, rows [3]string) {
	codes, pairs := ringPairs(before, after)
	segs = ringStrip(codes, width)
	var b, a, m strings.Builder
	for _, sg := range segs {
		p := ringPair{ringOwnerSeveral, ringOwnerSeveral}
		changed := false
		if sg.owner >= 0 {
			p = pairs[sg.owner]
			changed = p.before != p.after
		} else {
			for s := sg.lo; s < sg.lo+sg.n && !changed; s++ {
				changed = before[s] != after[s]
			}
		}
		b.WriteString(renderStrip([]ringStripSeg{{owner: p.before, cols: sg.cols}}, styled))
		a.WriteString(renderStrip([]ringStripSeg{{owner: p.after, cols: sg.cols}}, styled))
		mark := " "
		if changed {
			mark = "^"
		}
		m.WriteString(strings.Repeat(mark, sg.cols))
	}
	return segs, pairs, [3]string{b.String(), a.String(), strings.TrimRight(m.String(), " ")}
}

// ringDiffLines are the rings as shard ranges in diff form; a line is
// ' ', '-' or '+', a space, the range padded to the widest, two spaces,
// the cell.
func ringDiffLines(k *ringKeys, before, after []int) []string {
	type run struct {
		lo, hi int
		p      ringPair
	}
	var runs []run
	for s := range before {
		p := ringPair{before[s], after[s]}
		if n := len(runs); n > 0 && runs[n-1].p == p {
			runs[n-1].hi = s
		} else {
			runs = append(runs, run{s, s, p})
		}
	}
	span := func(r run) string {
		if r.lo == r.hi {
			return strconv.Itoa(r.lo)
		}
		return fmt.Sprintf("%d-%d", r.lo, r.hi)
	}
	wide := 0
	for _, r := range runs {
		wide = max(wide, len(span(r)))
	}
	var lines []string
	for _, r := range runs {
		line := func(mark string, owner int) string {
			return fmt.Sprintf("%s %-*s  %s", mark, wide, span(r), ringCellName(k, owner))
		}
		switch {
		case r.p.before == ringOwnerAbsent && r.p.after == ringOwnerAbsent:
			// in neither ring: nothing to show
		case r.p.before == r.p.after:
			lines = append(lines, line(" ", r.p.before))
		case r.p.before == ringOwnerAbsent: // an added shard
			lines = append(lines, line("+", r.p.after))
		case r.p.after == ringOwnerAbsent: // a removed shard
			lines = append(lines, line("-", r.p.before))
		default:
			lines = append(lines, line("-", r.p.before), line("+", r.p.after))
		}
	}
	return lines
}

// ringCellName names the cell of key owner, or what an owner code means.
func ringCellName(k *ringKeys, owner int) string {
	switch owner {
	case ringOwnerAbsent:
		return "(not in the ring)"
	case ringOwnerNone:
		return "(none)"
	case ringOwnerSeveral:
		return "(several)"
	}
	return k.cells[owner]
}

// printRingMoves prints the change from ring before to ring after as a
// diff: the aligned strips with the moved columns marked and a legend,
// the number of shards moved, added and removed, the ranges in diff form
// ('-' red and '+' green on a terminal; an added shard has only a + line,
// a removed one only a - line), and each cell's count before and after.
func printRingMoves(ios *IO, k *ringKeys, before, after ringfile.Ring, changes []ringfile.CellChange) error {
	shards := ringSpan(before, after)
	ob, oa := k.ownersIn(before, before.ShardSet(), shards), k.ownersIn(after, after.ShardSet(), shards)
	const indent = "        "
	width := ios.ringStripWidth()
	segs, pairs, rows := ringDiffStrips(ob, oa, max(width-len(indent), 1), true)
	fmt.Fprintln(ios.Out, "before  "+rows[0])
	fmt.Fprintln(ios.Out, "after   "+rows[1])
	if rows[2] != "" {
		fmt.Fprintln(ios.Out, "moved   "+rows[2])
	}
	ios.printStripFooter(k, segs, shards, width, indent, func(code int) []int {
		if code < 0 {
			return []int{code}
		}
		return []int{pairs[code].before, pairs[code].after}
	})
	moved := 0
	var added, removed []int
	for s := range ob {
		switch {
		case ob[s] == oa[s]:
		case ob[s] == ringOwnerAbsent:
			added = append(added, s)
		case oa[s] == ringOwnerAbsent:
			removed = append(removed, s)
		default:
			moved++
		}
	}
	fmt.Fprintf(ios.Out, "moves %d of %d shards", moved, len(before.ShardSet()))
	if len(added) > 0 {
		fmt.Fprintf(ios.Out, "; adds %d (%s)", len(added), ringfile.FormatShardSet(added))
	}
	if len(removed) > 0 {
		fmt.Fprintf(ios.Out, "; removes %d (%s)", len(removed), ringfile.FormatShardSet(removed))
	}
	fmt.Fprintln(ios.Out, ":")
	for _, l := range ringDiffLines(k, ob, oa) {
		switch l[0] {
		case '-':
			l = styleDel.Render(l)
		case '+':
			l = styleAdd.Render(l)
		}
		fmt.Fprintln(ios.Out, l)
	}
	rows2 := make([][]string, len(changes))
	for i, c := range changes {
		rows2[i] = []string{c.Cell, strconv.Itoa(c.Before), strconv.Itoa(c.After), fmt.Sprintf("%+d", c.After-c.Before)}
	}
	return ios.printTable([]string{"CELL", "BEFORE", "AFTER", "CHANGE"}, rows2)
}

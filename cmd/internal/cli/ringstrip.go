package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/fusee-dev/fusee/ringfile"
)

// The strip: a ring drawn as one line, shard 0 at the left, each column
// showing the cell that owns its shards by a key letter (and, on a
// terminal, that key's colour). Runs of shards on one cell are compressed
// to fit the width; the letters keep the strip readable without colour
// (NO_COLOR, a pipe, a file).

// ringStripDefaultWidth is the strip's width when the output has no width
// (a pipe or a file without $COLUMNS).
const ringStripDefaultWidth = 80

// Owner codes of a shard that is not on exactly one cell (a file shown
// with errors): placed on none, or on several.
// A shard the epoch's set does not have (another epoch's, drawn in the
// same columns) is absent.
const (
	ringOwnerNone    = -1
	ringOwnerSeveral = -2
	ringOwnerAbsent  = -3
)

// ringKeys gives each cell a key symbol and a colour, the same for every
// epoch of one output.
type ringKeys struct {
	cells []string
	index map[string]int
}

// ringKeySymbols are the keys, in order; cells beyond them share '+'.
const ringKeySymbols = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// ringKeyColours are background colours (ANSI 256) told apart on a dark
// and a light terminal; keys beyond them repeat them.
var ringKeyColours = []string{"33", "208", "70", "170", "220", "45", "196", "141", "107", "203", "39", "178"}

// newRingKeys assigns keys to the cells in the order given, each once.
func newRingKeys(cells ...[]string) *ringKeys {
	k := &ringKeys{index: map[string]int{}}
	for _, list := range cells {
		for _, c := range list {
			if _, ok := k.index[c]; !ok {
				k.index[c] = len(k.cells)
				k.cells = append(k.cells, c)
			}
		}
	}
	return k
}

// ringDeclared lists p's declared cells, the first to get keys.
func ringDeclared(p *ringfile.Policy) []string {
	ids := make([]string, len(p.Cells))
	for i, c := range p.Cells {
		ids[i] = c.ID
	}
	return ids
}

// symbol is the key of cell index i, or of an owner code.
func ringKeySymbol(i int) byte {
	switch {
	case i == ringOwnerNone:
		return '?'
	case i == ringOwnerSeveral:
		return '*'
	case i == ringOwnerAbsent:
		return '.'
	case i < len(ringKeySymbols):
		return ringKeySymbols[i]
	}
	return '+'
}

// style is how key i is drawn on a terminal.
func ringKeyStyle(i int) lipgloss.Style {
	if i == ringOwnerAbsent {
		return lipgloss.NewStyle()
	}
	if i < 0 {
		return lipgloss.NewStyle().Reverse(true)
	}
	c := ringKeyColours[i%len(ringKeyColours)]
	return lipgloss.NewStyle().Background(lipgloss.Color(c)).Foreground(lipgloss.Color("0"))
}

// owners maps each shard 0..shards-1 to the index of its cell in k (or an
// owner code), from the ring.
func (k *ringKeys) owners(ring ringfile.Ring, shards int) []int {
	own := make([]int, shards)
	for i := range own {
		own[i] = ringOwnerNone
	}
	for _, s := range ring {
		if s.Shard < 0 || s.Shard >= shards {
			continue
		}
		c := k.index[s.Cell]
		switch own[s.Shard] {
		case ringOwnerNone:
			own[s.Shard] = c
		case c:
		default:
			own[s.Shard] = ringOwnerSeveral
		}
	}
	return own
}

// ownersIn is owners over 0..span-1 with every shard outside set (the
// epoch's shard set) marked absent rather than unplaced.
func (k *ringKeys) ownersIn(ring ringfile.Ring, set []int, span int) []int {
	own := k.owners(ring, span)
	in := make([]bool, span)
	for _, sh := range set {
		if sh < span {
			in[sh] = true
		}
	}
	for i := range own {
		if !in[i] && own[i] == ringOwnerNone {
			own[i] = ringOwnerAbsent
		}
	}
	return own
}

// ringSpan is one more than the highest shard of any of the rings: the
// columns that show them all.
func ringSpan(rings ...ringfile.Ring) int {
	n := 0
	for _, r := range rings {
		if set := r.ShardSet(); len(set) > 0 {
			n = max(n, set[len(set)-1]+1)
		}
	}
	return n
}

// ringStripSeg is a stretch of the strip: cols columns of key owner,
// standing for the n shards from lo.
type ringStripSeg struct {
	owner, cols int
	lo, n       int
}

// ringStrip lays owners (one per shard) out in at most width columns. With
// a shard per column when they fit; otherwise each run of shards on one
// cell gets at least one column and the rest of the width in proportion to
// its length (largest remainders first, then the earlier run), so that no
// run disappears; and when there are more runs than columns, each column
// stands for an equal slice of the shards, drawn '*' where the slice holds
// more than one cell.
func ringStrip(owners []int, width int) []ringStripSeg {
	width = max(width, 1)
	var runs []ringStripSeg // a column per shard
	for s, o := range owners {
		if n := len(runs); n > 0 && runs[n-1].owner == o {
			runs[n-1].cols++
			runs[n-1].n++
		} else {
			runs = append(runs, ringStripSeg{owner: o, cols: 1, lo: s, n: 1})
		}
	}
	total := len(owners)
	switch {
	case total <= width:
		return runs
	case len(runs) <= width:
		return ringStripProportional(runs, total, width)
	}
	var segs []ringStripSeg
	for col := range width {
		lo, hi := col*total/width, (col+1)*total/width
		o := owners[lo]
		for _, x := range owners[lo:hi] {
			if x != o {
				o = ringOwnerSeveral
				break
			}
		}
		// A column spanning cells stays a segment of its own, so that
		// what it covers is known column by column.
		if n := len(segs); n > 0 && segs[n-1].owner == o && o != ringOwnerSeveral {
			segs[n-1].cols++
			segs[n-1].n += hi - lo
		} else {
			segs = append(segs, ringStripSeg{owner: o, cols: 1, lo: lo, n: hi - lo})
		}
	}
	return segs
}

// ringStripProportional gives each run one column and shares the other
// width-len(runs) columns in proportion to the runs' lengths.
func ringStripProportional(runs []ringStripSeg, total, width int) []ringStripSeg {
	spare := width - len(runs)
	out := make([]ringStripSeg, len(runs))
	rem := make([]int, len(runs))
	used := 0
	for i, r := range runs {
		share := spare * r.n
		out[i] = ringStripSeg{owner: r.owner, cols: 1 + share/total, lo: r.lo, n: r.n}
		rem[i] = share % total
		used += out[i].cols
	}
	for ; used < width; used++ {
		best := -1
		for i := range rem {
			if best < 0 || rem[i] > rem[best] {
				best = i
			}
		}
		out[best].cols++
		rem[best] = -1
	}
	return out
}

// renderStrip draws segs: key letters, styled when styled is true.
func renderStrip(segs []ringStripSeg, styled bool) string {
	var b strings.Builder
	for _, s := range segs {
		text := strings.Repeat(string(ringKeySymbol(s.owner)), s.cols)
		if styled {
			text = ringKeyStyle(s.owner).Render(text)
		}
		b.WriteString(text)
	}
	return b.String()
}

// ringStripScale is the line under a strip of cols columns over shards:
// the first shard under its left end and the last under its right, or ""
// when they do not fit.
func ringStripScale(shards, cols int) string {
	first, last := "0", strconv.Itoa(shards-1)
	if shards < 2 || cols < len(first)+1+len(last) {
		return ""
	}
	return first + strings.Repeat(" ", cols-len(first)-len(last)) + last
}

func ringLegendItem(owner int, name string, styled bool) string {
	key := string(ringKeySymbol(owner))
	if styled {
		key = ringKeyStyle(owner).Render(key)
	}
	return key + " " + name
}

// ringWrap joins items after lead, two spaces apart, in lines no wider
// than width where it can (an item is never split; 0: one line); the
// lines after the first are indented like the first item.
func ringWrap(lead string, items []string, width int) []string {
	var lines []string
	cur, curw := lead, len(lead)
	for i, it := range items {
		w := lipgloss.Width(it)
		if i > 0 && width > 0 && curw+2+w > width {
			lines = append(lines, cur)
			cur, curw = strings.Repeat(" ", len(lead)), len(lead)
		} else if i > 0 {
			cur, curw = cur+"  ", curw+2
		}
		cur, curw = cur+it, curw+w
	}
	return append(lines, cur)
}

// printRingStrip prints an epoch's strip over shards 0..shards-1 (the
// columns every epoch of the output shares), its scale and its legend;
// set is the epoch's shard set.
func (io *IO) printRingStrip(k *ringKeys, ring ringfile.Ring, set []int, shards int) {
	if shards < 1 {
		return
	}
	width := io.ringStripWidth()
	segs := ringStrip(k.ownersIn(ring, set, shards), width)
	fmt.Fprintln(io.Out, renderStrip(segs, true))
	io.printStripFooter(k, segs, shards, width, "", func(o int) []int { return []int{o} })
}

// ringStripWidth is the width a strip may use on io's output.
func (io *IO) ringStripWidth() int {
	if io.Width <= 0 {
		return ringStripDefaultWidth
	}
	return io.Width
}

// printStripFooter prints the scale under a strip (indented by indent) and
// the legend of the keys it shows: keys says which keys a segment's owner
// stands for.
func (io *IO) printStripFooter(k *ringKeys, segs []ringStripSeg, shards, width int, indent string, keys func(owner int) []int) {
	var items []string
	cols, others := 0, 0
	seen := map[int]bool{}
	for _, s := range segs {
		cols += s.cols
	}
	var shown []int
	for _, s := range segs {
		for _, o := range keys(s.owner) {
			if !seen[o] {
				seen[o] = true
				shown = append(shown, o)
			}
		}
	}
	// In key order, the marks for odd shards ('?', '*') last.
	slices.SortFunc(shown, func(a, b int) int {
		if (a < 0) != (b < 0) {
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	})
	for _, o := range shown {
		if o >= len(ringKeySymbols) {
			others++
			continue
		}
		items = append(items, ringLegendItem(o, ringKeyMeaning(k, o, cols < shards), true))
	}
	if others > 0 {
		items = append(items, ringLegendItem(len(ringKeySymbols), fmt.Sprintf("%d more cells", others), true))
	}
	if scale := ringStripScale(shards, cols); scale != "" {
		fmt.Fprintln(io.Out, indent+scale)
	}
	for _, l := range ringWrap("key: ", items, width) {
		fmt.Fprintln(io.Out, l)
	}
}

// ringKeyMeaning is what key owner stands for in a legend; compressed says
// a column may stand for several shards.
func ringKeyMeaning(k *ringKeys, owner int, compressed bool) string {
	switch owner {
	case ringOwnerAbsent:
		return "not in this ring's shard set"
	case ringOwnerNone:
		return "no cell (shards the ring does not place)"
	case ringOwnerSeveral:
		if compressed {
			return "several cells (in one column's shards, or a shard placed twice)"
		}
		return "several cells (a shard placed twice)"
	}
	return k.cells[owner]
}

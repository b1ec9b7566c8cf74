package ringfile

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MaxShards bounds shard numbers: a ring places shards 0..MaxShards-1 at
// most. Each epoch's ring names its own set of them; a cell needs a shard,
// so the set caps the number of cells.
const MaxShards = 1024

// NoEpoch is the current epoch of a namespace that has no epoch yet (it is
// not ready: nothing resolves and nothing mints).
const NoEpoch int64 = -1

// Status is an epoch's place in its lifecycle. It only moves forward:
// OPEN -> DRAINING -> RETIRED.
type Status uint8

const (
	StatusOpen Status = iota + 1
	StatusDraining
	StatusRetired
)

var statusNames = map[Status]string{
	StatusOpen:     "open",
	StatusDraining: "draining",
	StatusRetired:  "retired",
}

// String is the lower-case name the ring file uses.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus accepts a status name in any case ("open", "OPEN").
func ParseStatus(s string) (Status, error) {
	for st, name := range statusNames {
		if strings.EqualFold(s, name) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown status %q (want open, draining or retired)", s)
}

// Slot places one shard on one cell, optionally in a region. Line is where
// the slot came from in a parsed file (0 when built in memory).
type Slot struct {
	Shard  int
	Cell   string
	Region string
	Line   int
}

// Ring is an epoch's placement, in order: a cell mints into its shards in
// the order its slots appear here.
type Ring []Slot

// Epoch is one numbered generation of the ring. Shards is its shard set,
// ascending: exactly the shards its ring must place, each once. A ring
// file declares it (or, in format 1, the file's one shard count does for
// every epoch); a policy read from the reference's JSON takes it from the
// ring. Nil means undeclared: Validate then takes the ring's own shards.
type Epoch struct {
	Number int64
	Status Status
	Ring   Ring
	Shards []int
	Line   int
}

// CellDecl declares a cell a ring may name, with the fingerprint of its
// storage when known. The same id may be declared more than once (replicas,
// each reporting the fingerprint they see); the fingerprints must agree.
type CellDecl struct {
	ID          string
	Fingerprint string
	Line        int
}

// Lines records where the header fields of a parsed file were.
type Lines struct {
	Namespace, Shards, Revision, Current int // Shards: format 1's header
}

// Policy is one namespace's placement policy. Epochs are kept in ascending
// order of Number.
type Policy struct {
	File      string // the file it was read from, for messages; may be empty
	Namespace string
	Revision  int64 // bumped by every write; the generation nodes watch
	Current   int64 // the OPEN epoch new ids mint into, or NoEpoch
	Cells     []CellDecl
	Epochs    []Epoch
	Lines     Lines
	// unread is set by a parse that refused lines: what they would have
	// said is unknown, so Validate skips the rules they decide.
	unread *unread
}

// unread records which parts of a file a parse could not fully read.
type unread struct {
	keys   map[string]bool // header keys refused, repeated or missing
	cells  bool            // a cell line was refused
	epochs bool            // an epoch line was refused (its ring is lost)
	rings  map[int64]bool  // epochs with a refused slot line
}

func (u *unread) key(k string) bool     { return u != nil && u.keys[k] }
func (u *unread) declared() bool        { return u != nil && u.cells }
func (u *unread) epochList() bool       { return u != nil && (u.epochs || u.keys["current-epoch"]) }
func (u *unread) ring(epoch int64) bool { return u != nil && u.rings[epoch] }

// Epoch returns epoch n, or nil.
func (p *Policy) Epoch(n int64) *Epoch {
	i, ok := slices.BinarySearchFunc(p.Epochs, n, func(e Epoch, n int64) int {
		switch {
		case e.Number < n:
			return -1
		case e.Number > n:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &p.Epochs[i]
}

// CurrentEpoch returns the current epoch, or nil when there is none.
func (p *Policy) CurrentEpoch() *Epoch {
	if p.Current == NoEpoch {
		return nil
	}
	return p.Epoch(p.Current)
}

// Clone returns a deep copy, so a transition can never reach the policy it
// started from.
func (p *Policy) Clone() *Policy {
	q := *p
	q.Cells = slices.Clone(p.Cells)
	q.Epochs = make([]Epoch, len(p.Epochs))
	for i, e := range p.Epochs {
		e.Ring = slices.Clone(e.Ring)
		e.Shards = slices.Clone(e.Shards)
		q.Epochs[i] = e
	}
	return &q
}

// IsDeclared reports whether a cell id is declared.
func (p *Policy) IsDeclared(cell string) bool {
	return slices.ContainsFunc(p.Cells, func(c CellDecl) bool { return c.ID == cell })
}

// Declare adds a cell declaration as declare does, without its source line:
// how a policy read from elsewhere keeps a ring file's fingerprints.
func (p *Policy) Declare(d CellDecl) { p.declare(CellDecl{ID: d.ID, Fingerprint: d.Fingerprint}) }

// declare adds a declaration unless one that says as much exists: a
// fingerprint given for a cell declared without one fills it in; a
// different fingerprint is added, for Validate to refuse as a conflict.
func (p *Policy) declare(d CellDecl) {
	for i, c := range p.Cells {
		if c.ID != d.ID {
			continue
		}
		switch {
		case c.Fingerprint == d.Fingerprint || d.Fingerprint == "":
			return
		case c.Fingerprint == "":
			p.Cells[i].Fingerprint = d.Fingerprint
			return
		}
	}
	p.Cells = append(p.Cells, d)
}

// Owners returns the slots that place shard, in ring order: exactly one in
// a valid ring.
func (r Ring) Owners(shard int) []Slot {
	var out []Slot
	for _, s := range r {
		if s.Shard == shard {
			out = append(out, s)
		}
	}
	return out
}

// Owned returns the shards cell owns, in ring order (the order it mints
// into them).
func (r Ring) Owned(cell string) []int64 {
	var out []int64
	for _, s := range r {
		if s.Cell == cell {
			out = append(out, int64(s.Shard))
		}
	}
	return out
}

// ShardSet returns the distinct shards the ring places, ascending.
func (r Ring) ShardSet() []int {
	out := make([]int, len(r))
	for i, s := range r {
		out[i] = s.Shard
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ShardSet is the epoch's shard set: the declared one, else its ring's.
func (e *Epoch) ShardSet() []int {
	if e.Shards != nil {
		return e.Shards
	}
	return e.Ring.ShardSet()
}

// Span is one more than the highest shard any epoch names (0 with no
// epoch): the width of a picture that shows every epoch in the same
// columns.
func (p *Policy) Span() int {
	n := 0
	for i := range p.Epochs {
		if set := p.Epochs[i].ShardSet(); len(set) > 0 {
			n = max(n, set[len(set)-1]+1)
		}
	}
	return n
}

// ShardsUpTo returns 0..n-1: the genesis set of `ring init --shards n` and
// every epoch's set in a format 1 file.
func ShardsUpTo(n int) []int {
	out := make([]int, max(n, 0))
	for i := range out {
		out[i] = i
	}
	return out
}

// Cells returns the distinct cells the ring names, in order of first
// appearance.
func (r Ring) Cells() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range r {
		if !seen[s.Cell] {
			seen[s.Cell] = true
			out = append(out, s.Cell)
		}
	}
	return out
}

// Counts returns how many shards each cell owns.
func (r Ring) Counts() map[string]int {
	out := map[string]int{}
	for _, s := range r {
		out[s.Cell]++
	}
	return out
}

// SamePlacement reports whether two rings place the same shards on the same
// cells and regions in the same order (source lines are ignored).
func (r Ring) SamePlacement(o Ring) bool {
	return slices.EqualFunc(r, o, func(a, b Slot) bool {
		return a.Shard == b.Shard && a.Cell == b.Cell && a.Region == b.Region
	})
}

// EvenRing places shards 0..n-1 on cells in contiguous ranges, in the order
// given; the first n mod len(cells) cells get one shard more.
func EvenRing(n int, cells []string) Ring {
	ring := make(Ring, 0, n)
	k := len(cells)
	next := 0
	for i, c := range cells {
		size := n / k
		if i < n%k {
			size++
		}
		for j := 0; j < size; j++ {
			ring = append(ring, Slot{Shard: next, Cell: c})
			next++
		}
	}
	return ring
}

// ActiveCells returns every cell in any epoch that is not RETIRED, sorted:
// the cells workers must poll.
func (p *Policy) ActiveCells() []string {
	set := map[string]bool{}
	for _, e := range p.Epochs {
		if e.Status == StatusRetired {
			continue
		}
		for _, s := range e.Ring {
			set[s.Cell] = true
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Draining returns the numbers of the DRAINING epochs, ascending.
func (p *Policy) Draining() []int64 {
	var out []int64
	for _, e := range p.Epochs {
		if e.Status == StatusDraining {
			out = append(out, e.Number)
		}
	}
	return out
}

package ringfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Cell bindings (seed 000 §9). A cell id is free text, so two groups of
// nodes on two databases could reuse one and be conflated into one cell.
// A binding ties (namespace, cell id) to the fingerprint of the cell's
// storage: a claim with the same fingerprint is a replica of the cell
// (allowed), one with another fingerprint is a second database (refused),
// and a claim without a fingerprint (storage that cannot be shared) is
// exempt and binds nothing. A binding no live node references is pruned,
// so a decommissioned cell id can be used again.
//
// In a policy the binding of a cell is its declared fingerprint: a ring
// file's `cell C fingerprint=F` line, or on etcd the binding key the
// store reads into the declarations. One source of truth: Bind, Unbind
// and Prune are changes of the policy like OpenEpoch, written through a
// store's Update (under the lock, a new revision, the expected revision
// honoured).

// ErrBindingConflict: a cell id is bound to another storage fingerprint.
var ErrBindingConflict = errors.New("cell id bound to another fingerprint")

// Binding is one claim of a cell id in a namespace.
type Binding struct {
	Namespace   string `json:"namespace"`
	Cell        string `json:"cell_id"`
	Fingerprint string `json:"fingerprint"`
}

// BindingConflictError is a claim of a cell id bound to another
// fingerprint.
type BindingConflictError struct {
	Name      string // the store, for messages
	Namespace string
	Cell      string
	Bound     string // the fingerprint the cell id is bound to
	Claimed   string // the fingerprint that claimed it
}

func (e *BindingConflictError) Error() string {
	return fmt.Sprintf("%scell %s of %s is bound to fingerprint %s, and %s is another database: two cells would share one cell id; give the new cell a distinct cell id (if %s was decommissioned, `fusee ring prune-bindings` frees the id once no live node names it)",
		position(e.Name, 0), e.Cell, e.Namespace, e.Bound, e.Claimed, e.Cell)
}

func (e *BindingConflictError) Is(target error) bool { return target == ErrBindingConflict }

// Claim is what a claim of a cell id came to.
type Claim uint8

const (
	ClaimNew     Claim = iota + 1 // the binding was made
	ClaimReplica                  // the same fingerprint: a replica, nothing to write
	ClaimExempt                   // no fingerprint: exempt, nothing to write
)

func (c Claim) String() string {
	switch c {
	case ClaimNew:
		return "claimed"
	case ClaimReplica:
		return "replica"
	case ClaimExempt:
		return "exempt"
	}
	return fmt.Sprintf("claim(%d)", uint8(c))
}

// MarshalText makes a claim print as its name in JSON.
func (c Claim) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Bindings lists the policy's bindings, by cell id: each declared cell
// with a fingerprint (the first, should a faulty policy declare two).
func (p *Policy) Bindings() []Binding {
	var out []Binding
	for _, c := range p.Cells {
		if c.Fingerprint == "" || slices.ContainsFunc(out, func(b Binding) bool { return b.Cell == c.ID }) {
			continue
		}
		out = append(out, Binding{Namespace: p.Namespace, Cell: c.ID, Fingerprint: c.Fingerprint})
	}
	slices.SortFunc(out, func(a, b Binding) int { return strings.Compare(a.Cell, b.Cell) })
	return out
}

// Bound returns the fingerprint cell is bound to, or "".
func (p *Policy) Bound(cell string) string {
	for _, c := range p.Cells {
		if c.ID == cell && c.Fingerprint != "" {
			return c.Fingerprint
		}
	}
	return ""
}

// Bind is the claim of cell by storage fingerprint fp: with no
// fingerprint it is exempt, with the bound one a replica (next is nil for
// both: nothing to write); with another it is a *BindingConflictError;
// otherwise next binds the cell (declaring it if no ring names it yet) at
// the next revision.
func Bind(p *Policy, cell, fp string) (next *Policy, claim Claim, err error) {
	if err := CheckName("cell id", cell); err != nil {
		return nil, 0, err
	}
	if fp == "" {
		return nil, ClaimExempt, nil
	}
	if err := CheckFingerprint(fp); err != nil {
		return nil, 0, err
	}
	switch bound := p.Bound(cell); bound {
	case fp:
		return nil, ClaimReplica, nil
	case "":
	default:
		return nil, 0, &BindingConflictError{Name: p.File, Namespace: p.Namespace, Cell: cell, Bound: bound, Claimed: fp}
	}
	next = p.Clone()
	next.declare(CellDecl{ID: cell, Fingerprint: fp})
	next.Revision++
	return next, ClaimNew, nil
}

// LiveNode is one node of the coordinator's roster: the cell it serves in
// a namespace.
type LiveNode struct {
	Namespace string `json:"namespace"`
	Cell      string `json:"cell_id"`
}

// ParseLiveNodes reads the roster as a JSON array of nodes, each with its
// "namespace" and "cell_id" (other keys, such as a node id, are allowed
// and ignored). It fails closed: an entry without either is an error,
// not a node that names nothing, since pruning on a misread roster would
// free the cell id of a live node. name is the input, for messages.
func ParseLiveNodes(name string, data []byte) ([]LiveNode, error) {
	var raw []map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of live nodes, [{\"namespace\": \"orders\", \"cell_id\": \"cellA\"}, ...]: %v", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value: want one array of live nodes", name)
	}
	nodes := make([]LiveNode, len(raw))
	for i, entry := range raw {
		for _, key := range []string{"namespace", "cell_id"} {
			var s string
			v, ok := entry[key]
			if !ok || json.Unmarshal(v, &s) != nil || s == "" {
				return nil, fmt.Errorf("%s: node %d has no %q string: every live node must name its namespace and cell_id (refusing to guess which bindings are in use)", name, i, key)
			}
			if key == "namespace" {
				nodes[i].Namespace = s
			} else {
				nodes[i].Cell = s
			}
		}
	}
	return nodes, nil
}

// KeptBinding is a binding that prune keeps although no live node names
// it, because an epoch that is not retired still places its cell.
type KeptBinding struct {
	Binding
	Epochs []int64 `json:"epochs"`
}

// BindingsChange is what Prune or Unbind does: the bindings it removes
// and those it keeps for a live epoch.
type BindingsChange struct {
	Removed []Binding
	Kept    []KeptBinding
}

// Prune removes every binding of p that no live node of p's namespace
// names, so the cell id can be claimed again. It is stricter than the
// reference and fails closed: a binding whose cell an OPEN or DRAINING
// epoch's ring places is kept (and reported as kept), since a node that
// is merely down must not lose its cell id to another database. next is
// nil when nothing is removed.
func Prune(p *Policy, live []LiveNode) (next *Policy, ch BindingsChange) {
	named := liveCells(p.Namespace, live)
	placing := placingEpochs(p)
	for _, b := range p.Bindings() {
		switch {
		case named[b.Cell]:
		case len(placing[b.Cell]) > 0:
			ch.Kept = append(ch.Kept, KeptBinding{Binding: b, Epochs: placing[b.Cell]})
		default:
			ch.Removed = append(ch.Removed, b)
		}
	}
	if len(ch.Removed) == 0 {
		return nil, ch
	}
	next = p.Clone()
	for _, b := range ch.Removed {
		next.unbind(b.Cell)
	}
	next.Revision++
	return next, ch
}

// Unbind removes the binding of one cell, refusing while a live node
// names the cell or a live epoch places it, or when the cell is not bound.
func Unbind(p *Policy, cell string, live []LiveNode) (*Policy, Binding, error) {
	b := Binding{Namespace: p.Namespace, Cell: cell, Fingerprint: p.Bound(cell)}
	switch epochs := placingEpochs(p)[cell]; {
	case b.Fingerprint == "":
		return nil, b, fmt.Errorf("%scell %s of %s is not bound: nothing to remove", position(p.File, 0), cell, p.Namespace)
	case liveCells(p.Namespace, live)[cell]:
		return nil, b, fmt.Errorf("%scell %s of %s is named by a live node: refusing to free its cell id while the cell runs", position(p.File, 0), cell, p.Namespace)
	case len(epochs) > 0:
		return nil, b, fmt.Errorf("%scell %s of %s is placed by %s, not retired: refusing to free its cell id while ids route to it (retire %s first)",
			position(p.File, 0), cell, p.Namespace, EpochList(epochs), them(len(epochs)))
	}
	next := p.Clone()
	next.unbind(cell)
	next.Revision++
	return next, b, nil
}

// unbind clears cell's fingerprint; a declaration no epoch's ring names is
// dropped whole, as a store that keeps only rings and bindings (etcd)
// would not have it either.
func (p *Policy) unbind(cell string) {
	named := false
	for _, e := range p.Epochs {
		if len(e.Ring.Owned(cell)) > 0 {
			named = true
			break
		}
	}
	if !named {
		p.Cells = slices.DeleteFunc(p.Cells, func(c CellDecl) bool { return c.ID == cell })
		return
	}
	p.Cells = slices.DeleteFunc(p.Cells, func(c CellDecl) bool { return c.ID == cell && c.Fingerprint != "" })
	if !p.IsDeclared(cell) {
		p.Cells = append(p.Cells, CellDecl{ID: cell})
	}
}

func liveCells(namespace string, live []LiveNode) map[string]bool {
	out := map[string]bool{}
	for _, n := range live {
		if n.Namespace == namespace {
			out[n.Cell] = true
		}
	}
	return out
}

// placingEpochs maps each cell to the epochs, not retired, whose rings
// place it.
func placingEpochs(p *Policy) map[string][]int64 {
	out := map[string][]int64{}
	for _, e := range p.Epochs {
		if e.Status == StatusRetired {
			continue
		}
		for _, c := range e.Ring.Cells() {
			out[c] = append(out[c], e.Number)
		}
	}
	return out
}

// EpochList names epochs as a noun phrase: "epoch 2", "epochs 1, 2".
func EpochList(epochs []int64) string {
	parts := make([]string, len(epochs))
	for i, e := range epochs {
		parts[i] = fmt.Sprint(e)
	}
	if len(epochs) == 1 {
		return "epoch " + parts[0]
	}
	return "epochs " + strings.Join(parts, ", ")
}

package ringfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The plan file records what `open-epoch --plan` needs: the namespace it
// is for, the revision and epoch it was computed from, the goal (for the
// reader), cells it introduces, the shards it adds and removes (when it
// does) and the new ring, in the ring file's slot syntax:
//
//	fusee-ring-plan 2
//	namespace orders
//	base-revision 3
//	base-epoch 0
//	goal split cellA:cellB
//	cell cellB
//	add-shards 4-5        (only when the plan adds shards)
//	remove-shards 0       (only when it removes some)
//	ring
//	  0-1 cellA
//	  2-3 cellB

// Format 1 plans, which had a `shards S` line, are still read: their ring
// must keep the current epoch's set, as a plan that names no change must.

const planMagic = "fusee-ring-plan"

// FormatPlan writes a plan file.
func FormatPlan(pl *Plan) []byte {
	var b strings.Builder
	b.WriteString("# fusee ring plan: open it with `fusee ring open-epoch FILE --plan THIS`.\n")
	fmt.Fprintf(&b, "%s %d\n", planMagic, FormatVersion)
	fmt.Fprintf(&b, "namespace %s\n", pl.Namespace)
	fmt.Fprintf(&b, "base-revision %d\nbase-epoch %d\n", pl.BaseRevision, pl.BaseEpoch)
	fmt.Fprintf(&b, "goal %s\n", pl.Goal)
	writeCells(&b, pl.Declare)
	if len(pl.Change.Add) > 0 {
		fmt.Fprintf(&b, "add-shards %s\n", strings.Join(ShardRanges(pl.Change.Add), ","))
	}
	if len(pl.Change.Remove) > 0 {
		fmt.Fprintf(&b, "remove-shards %s\n", strings.Join(ShardRanges(pl.Change.Remove), ","))
	}
	b.WriteString("ring\n")
	writeRing(&b, "  ", pl.Ring)
	return []byte(b.String())
}

// LoadPlan reads and parses a plan file.
func LoadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	return ParsePlan(path, data)
}

// ParsePlan reads a plan file strictly: every field once, in any order
// before `ring`; slot lines after it.
func ParsePlan(file string, data []byte) (*Plan, error) {
	ps := &parser{file: file, p: &Policy{}, seen: map[string]int{}}
	pl := &Plan{BaseEpoch: NoEpoch}
	inRing := false
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, raw := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields := strings.Fields(trimmed)
		if raw[0] == ' ' || raw[0] == '\t' {
			if !inRing {
				ps.errorf(n, "slot line before `ring`")
				continue
			}
			ps.planSlot(n, fields, pl)
			continue
		}
		if inRing {
			ps.errorf(n, "%q after the ring: the ring is the last section", fields[0])
			continue
		}
		inRing = ps.planLine(n, fields, pl)
	}
	required := []string{planMagic, "namespace", "base-revision", "base-epoch", "goal", "ring"}
	if ps.version == 1 {
		required = append(required, "shards")
	}
	for _, key := range required {
		if _, ok := ps.seen[key]; !ok {
			ps.errorf(0, "missing `%s` line", key)
		}
	}
	if len(ps.errs) > 0 {
		return nil, errors.Join(ps.errs...)
	}
	pl.Declare = ps.p.Cells
	return pl, nil
}

// planLine reads one field of a plan; it reports whether the ring starts.
func (ps *parser) planLine(n int, fields []string, pl *Plan) bool {
	key := fields[0]
	if key != "cell" {
		if first, dup := ps.seen[key]; dup {
			ps.errorf(n, "duplicate %s (first on line %d)", key, first)
			return false
		}
		ps.seen[key] = n
	}
	arg := strings.Join(fields[1:], " ")
	switch key {
	case planMagic:
		switch arg {
		case "1":
			ps.version = 1
		case strconv.Itoa(FormatVersion):
			ps.version = FormatVersion
		default:
			ps.errorf(n, "unsupported plan format %q: this fusee reads `%s 1` and `%s %d`", arg, planMagic, planMagic, FormatVersion)
		}
	case "namespace":
		pl.Namespace = arg
	case "shards":
		if ps.version != 1 {
			ps.errorf(n, "`shards` is a format 1 plan's line")
		}
	case "add-shards", "remove-shards":
		set, err := ParseShardList(arg)
		if err != nil {
			ps.errorf(n, "%s: %v", key, err)
		} else if key == "add-shards" {
			pl.Change.Add = set
		} else {
			pl.Change.Remove = set
		}
	case "base-revision":
		pl.BaseRevision, _ = ps.number(n, key, arg, 1<<62)
	case "base-epoch":
		pl.BaseEpoch, _ = ps.number(n, key, arg, 1<<62)
	case "goal":
		pl.Goal = arg
	case "cell":
		ps.cellLine(n, fields) // collects into ps.p.Cells
	case "ring":
		if arg != "" {
			ps.errorf(n, "`ring` takes no value")
		}
		return true
	default:
		ps.errorf(n, "unknown key %q in a plan", key)
	}
	return false
}

func (ps *parser) planSlot(n int, fields []string, pl *Plan) {
	if len(fields) != 2 {
		ps.errorf(n, "want `SHARD CELL[@REGION]` or `FIRST-LAST CELL[@REGION]`")
		return
	}
	slots, err := ParseSlot(fields[0], fields[1])
	if err != nil {
		ps.errorf(n, "%v", err)
		return
	}
	for i := range slots {
		slots[i].Line = n
	}
	pl.Ring = append(pl.Ring, slots...)
}

// OpenPlan opens a plan's ring as the next epoch of p, with the shard
// change the plan names. The plan must be for p's namespace and computed
// from p's current revision and epoch; anything else is a *ConflictError
// (the file moved on since the plan was made), or an *AppliedError when
// the plan is what moved it on: its ring is the current epoch's already.
func OpenPlan(p *Policy, pl *Plan) (*Policy, error) {
	if pl.Namespace != p.Namespace {
		return nil, fmt.Errorf("the plan is for namespace %s, the policy is %s's", pl.Namespace, p.Namespace)
	}
	if pl.BaseRevision != p.Revision || pl.BaseEpoch != p.Current {
		if applied := PlanApplied(p, pl); applied != nil {
			return nil, applied
		}
		return nil, &ConflictError{File: p.File, Expected: pl.BaseRevision, Actual: p.Revision, What: "the plan"}
	}
	return OpenEpoch(p, pl.Ring, pl.Change, pl.Declare...)
}

// PlanApplied returns an *AppliedError when the epoch right after the
// plan's base epoch has the plan's ring: the plan was opened already. A
// plan refused for its base revision is checked with it, so that opening
// a plan twice says so rather than suggest a retry that cannot succeed.
func PlanApplied(p *Policy, pl *Plan) error {
	e := p.Epoch(pl.BaseEpoch + 1)
	if e == nil || !e.Ring.SamePlacement(pl.Ring) {
		return nil
	}
	return &AppliedError{File: p.File, Epoch: e.Number, Revision: p.Revision}
}

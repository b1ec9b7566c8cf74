package ringfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The plan file records what `open-epoch --plan` needs: the namespace and
// shard count it is for, the revision and epoch it was computed from, the
// goal (for the reader), cells it introduces and the new ring, in the ring
// file's slot syntax:
//
//	fusee-ring-plan 1
//	namespace orders
//	shards 4
//	base-revision 3
//	base-epoch 0
//	goal split cellA:cellB
//	cell cellB
//	ring
//	  0-1 cellA
//	  2-3 cellB

const planMagic = "fusee-ring-plan"

// FormatPlan writes a plan file.
func FormatPlan(pl *Plan) []byte {
	var b strings.Builder
	b.WriteString("# fusee ring plan: open it with `fusee ring open-epoch FILE --plan THIS`.\n")
	fmt.Fprintf(&b, "%s %d\n", planMagic, FormatVersion)
	fmt.Fprintf(&b, "namespace %s\nshards %d\n", pl.Namespace, pl.Shards)
	fmt.Fprintf(&b, "base-revision %d\nbase-epoch %d\n", pl.BaseRevision, pl.BaseEpoch)
	fmt.Fprintf(&b, "goal %s\n", pl.Goal)
	writeCells(&b, pl.Declare)
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
	for _, key := range []string{planMagic, "namespace", "shards", "base-revision", "base-epoch", "goal", "ring"} {
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
		if arg != strconv.Itoa(FormatVersion) {
			ps.errorf(n, "unsupported plan format %q: this fusee reads `%s %d`", arg, planMagic, FormatVersion)
		}
	case "namespace":
		pl.Namespace = arg
	case "shards":
		if s, ok := ps.number(n, key, arg, MaxShards); ok {
			pl.Shards = int(s)
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

// OpenPlan opens a plan's ring as the next epoch of p. The plan must be
// for p's namespace and shard count and computed from p's current revision
// and epoch; anything else is a *ConflictError (the file moved on since the
// plan was made: plan again).
func OpenPlan(p *Policy, pl *Plan) (*Policy, error) {
	if pl.Namespace != p.Namespace || pl.Shards != p.Shards {
		return nil, fmt.Errorf("the plan is for %s with %d shards, the file holds %s with %d shards",
			pl.Namespace, pl.Shards, p.Namespace, p.Shards)
	}
	if pl.BaseRevision != p.Revision || pl.BaseEpoch != p.Current {
		return nil, &ConflictError{File: p.File, Expected: pl.BaseRevision, Actual: p.Revision, What: "the plan"}
	}
	return OpenEpoch(p, pl.Ring, pl.Declare...)
}

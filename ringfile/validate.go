package ringfile

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fusee-dev/fusee/idcodec"
)

// Severity says whether a finding forbids acting on the policy.
type Severity uint8

const (
	SeverityError Severity = iota + 1
	SeverityWarning
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// MarshalText makes a severity print as its name in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one problem Validate found. Line is 0 when the policy was not
// parsed from a file or the problem has no single line.
type Finding struct {
	Severity Severity `json:"severity"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Msg      string   `json:"message"`
}

func (f Finding) String() string {
	return position(f.File, f.Line) + f.Severity.String() + ": " + f.Msg
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == SeverityError })
}

// findings collects what Validate reports.
type findings struct {
	file    string
	list    []Finding
	covered []bool // scratch for validateRing, reused across epochs
}

// coverage returns a cleared scratch slice of n flags.
func (fs *findings) coverage(n int) []bool {
	n = max(n, 0)
	if cap(fs.covered) < n {
		fs.covered = make([]bool, n)
	}
	fs.covered = fs.covered[:n]
	clear(fs.covered)
	return fs.covered
}

func (fs *findings) errorf(line int, format string, args ...any) {
	fs.list = append(fs.list, Finding{SeverityError, fs.file, line, fmt.Sprintf(format, args...)})
}

func (fs *findings) warnf(line int, format string, args ...any) {
	fs.list = append(fs.list, Finding{SeverityWarning, fs.file, line, fmt.Sprintf(format, args...)})
}

// Validate checks every rule of the model and returns all findings: errors
// (the policy must not be acted on) and warnings. It never stops at the
// first problem. On a policy Parse returned with syntax errors it skips
// the rules the refused lines would decide (an epoch whose slot line was
// refused is not reported for the shards that line placed), so what it
// reports is what the file says, not an echo of its syntax errors.
func Validate(p *Policy) []Finding {
	fs := &findings{file: p.File}
	validateHeader(fs, p)
	validateCells(fs, p)
	if !p.unread.epochList() {
		validateEpochs(fs, p)
	}
	declared := make(map[string]bool, len(p.Cells))
	for _, c := range p.Cells {
		declared[c.ID] = true
	}
	for i := range p.Epochs {
		validateRing(fs, p, &p.Epochs[i], declared)
	}
	if p.unread == nil {
		warnStandby(fs, p)
	}
	return fs.list
}

// Check returns an *InvalidError when Validate finds an error.
func Check(p *Policy) error {
	fs := Validate(p)
	if HasErrors(fs) {
		return &InvalidError{File: p.File, Findings: fs}
	}
	return nil
}

// sampleULID stands in for a ulid when checking id lengths.
const sampleULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

func validateHeader(fs *findings, p *Policy) {
	switch {
	case p.unread.key("namespace"):
	case !validName(p.Namespace):
		fs.errorf(p.Lines.Namespace, "namespace %q is not a valid name (%s)", p.Namespace, nameRule)
	default:
		if _, err := idcodec.Format(p.Namespace, "", 0, 0, sampleULID); err != nil {
			fs.errorf(p.Lines.Namespace, "namespace %q cannot form ids: %v", p.Namespace, err)
		}
	}
	if p.Revision < 0 {
		fs.errorf(p.Lines.Revision, "revision %d is negative", p.Revision)
	}
}

// validateCells reports bad names and fingerprint conflicts: one cell id
// declared with two fingerprints would conflate two databases.
func validateCells(fs *findings, p *Policy) {
	first := map[string]CellDecl{} // first declaration with a fingerprint
	for _, c := range p.Cells {
		if !validName(c.ID) {
			fs.errorf(c.Line, "cell id %q is not a valid name (%s)", c.ID, nameRule)
			continue
		}
		if c.Fingerprint == "" {
			continue
		}
		if err := CheckFingerprint(c.Fingerprint); err != nil {
			fs.errorf(c.Line, "cell %s: %v", c.ID, err)
			continue
		}
		f, ok := first[c.ID]
		if !ok {
			first[c.ID] = c
			continue
		}
		if f.Fingerprint != c.Fingerprint {
			fs.errorf(c.Line, "cell %s is declared with two fingerprints, %s%s and %s%s: two databases would be conflated into one cell; give one of them a distinct cell id",
				c.ID, f.Fingerprint, inParens(f.Line), c.Fingerprint, inParens(c.Line))
		}
	}
}

func inParens(line int) string {
	if line == 0 {
		return ""
	}
	return fmt.Sprintf(" (line %d)", line)
}

func atLine(line int) string {
	if line == 0 {
		return ""
	}
	return fmt.Sprintf(" on line %d", line)
}

func validateEpochs(fs *findings, p *Policy) {
	if len(p.Epochs) == 0 {
		if p.Current != NoEpoch {
			fs.errorf(p.Lines.Current, "current epoch %d does not exist (the policy has no epoch)", p.Current)
			return
		}
		fs.warnf(p.Lines.Current, "no epoch: the namespace is not ready (resolve fails closed, no cell mints) until an epoch is opened")
		return
	}
	cur := p.CurrentEpoch()
	switch {
	case p.Current == NoEpoch:
		fs.errorf(p.Lines.Current, "the policy has epochs but no current epoch")
	case cur == nil:
		fs.errorf(p.Lines.Current, "current epoch %d does not exist", p.Current)
	case cur.Status != StatusOpen:
		fs.errorf(cur.Line, "current epoch %d is %s: the current epoch must be open", p.Current, cur.Status)
	}
	for i, e := range p.Epochs {
		if i > 0 && e.Number <= p.Epochs[i-1].Number {
			fs.errorf(e.Line, "epoch %d is out of order or repeated", e.Number)
		}
		if e.Number < 0 {
			fs.errorf(e.Line, "epoch %d is negative", e.Number)
		}
		if p.Current != NoEpoch && e.Number > p.Current {
			fs.errorf(e.Line, "epoch %d is newer than the current epoch %d", e.Number, p.Current)
		}
		if e.Status == StatusOpen && e.Number != p.Current {
			fs.errorf(e.Line, "epoch %d is open but the current epoch is %d: exactly one epoch is open, the current one", e.Number, p.Current)
		}
	}
}

// validateRing reports every way an id stamped in epoch e could resolve to
// the wrong cell or to none: the ring must place every shard of the
// epoch's own set exactly once, on a declared cell, and nothing else.
// declared holds the declared cell ids: a set, so the work is linear in
// the ring whatever the number of cells.
func validateRing(fs *findings, p *Policy, e *Epoch, declared map[string]bool) {
	if len(e.Ring) == 0 && !p.unread.ring(e.Number) {
		fs.errorf(e.Line, "epoch %d has an empty ring: no id of it can resolve", e.Number)
		return
	}
	set := e.ShardSet()
	inSet := fs.coverage(MaxShards)
	for _, sh := range set {
		if sh >= MaxShards {
			fs.errorf(e.Line, "epoch %d: its shard set names shard %d, outside 0..%d", e.Number, sh, MaxShards-1)
			continue
		}
		inSet[sh] = true
	}
	outside := map[int][]int{} // line -> shards outside the set
	undeclared := map[string]int{}
	for _, s := range e.Ring {
		if s.Shard < 0 || s.Shard >= MaxShards || !inSet[s.Shard] {
			outside[s.Line] = append(outside[s.Line], s.Shard)
			continue
		}
		if !validName(s.Cell) {
			fs.errorf(s.Line, "epoch %d: cell id %q is not a valid name (%s)", e.Number, s.Cell, nameRule)
		} else if _, seen := undeclared[s.Cell]; !seen && !declared[s.Cell] && !p.unread.declared() {
			undeclared[s.Cell] = s.Line
			fs.errorf(s.Line, "epoch %d: cell %s is not declared (add a line `cell %s`)", e.Number, s.Cell, s.Cell)
		}
		if s.Region != "" && !validName(s.Region) {
			fs.errorf(s.Line, "epoch %d: region %q is not a valid name (%s)", e.Number, s.Region, nameRule)
		}
	}
	for _, line := range sortedKeys(outside) {
		fs.errorf(line, "epoch %d: %s outside its shard set %s", e.Number, shardsAre(outside[line]), FormatShardSet(set))
	}
	inRange := len(e.Ring)
	for _, sh := range outside {
		inRange -= len(sh)
	}
	if inRange == len(set) && len(e.Ring.ShardSet()) == len(e.Ring) {
		return // every shard of the set exactly once: nothing to report
	}
	byShard := map[int][]Slot{} // only for a ring that covers badly
	for _, s := range e.Ring {
		if s.Shard >= 0 && s.Shard < MaxShards && inSet[s.Shard] {
			byShard[s.Shard] = append(byShard[s.Shard], s)
		}
	}
	reportCoverage(fs, p, e, set, byShard)
}

// reportCoverage reports shards placed on no cell and shards placed more
// than once, grouped into ranges so one bad line gives one finding.
func reportCoverage(fs *findings, p *Policy, e *Epoch, set []int, byShard map[int][]Slot) {
	var missing []int
	dups := map[string][]int{} // "line:cell,line:cell" -> shards
	dupLine := map[string]int{}
	for _, sh := range set {
		slots := byShard[sh]
		if len(slots) == 0 {
			missing = append(missing, sh)
			continue
		}
		if len(slots) > 1 {
			parts := make([]string, len(slots))
			for i, s := range slots {
				parts[i] = fmt.Sprintf("%s%s", s.Cell, atLine(s.Line))
			}
			key := strings.Join(parts, ", ")
			dups[key] = append(dups[key], sh)
			dupLine[key] = slots[1].Line
		}
	}
	if len(missing) > 0 && !p.unread.ring(e.Number) {
		fs.errorf(e.Line, "epoch %d: %s placed on no cell (an id stamped with such a shard would not resolve)", e.Number, shardsAre(missing))
	}
	keys := make([]string, 0, len(dups))
	for k := range dups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return dups[keys[i]][0] < dups[keys[j]][0] })
	for _, k := range keys {
		fs.errorf(dupLine[k], "epoch %d: %s placed more than once (%s): an id stamped with such a shard would resolve ambiguously", e.Number, shardsAre(dups[k]), k)
	}
}

// warnStandby warns about declared cells that own no shard in the current
// ring: they mint nothing. Not an error: a cell is declared before it is
// placed, and stays declared while older epochs still route to it.
func warnStandby(fs *findings, p *Policy) {
	cur := p.CurrentEpoch()
	if cur == nil {
		return
	}
	owns := cur.Ring.Counts()
	seen := map[string]bool{}
	var serving map[string][]string
	for _, c := range p.Cells {
		if seen[c.ID] || owns[c.ID] > 0 {
			continue
		}
		seen[c.ID] = true
		if serving == nil {
			serving = servingEpochs(p)
		}
		also := ""
		if nums := serving[c.ID]; len(nums) > 0 {
			also = "; it still serves draining epoch " + strings.Join(nums, ", ")
		}
		fs.warnf(c.Line, "cell %s owns no shard in the current epoch %d: standby, it mints nothing%s", c.ID, p.Current, also)
	}
	set := cur.ShardSet()
	top := 0
	if len(set) > 0 {
		top = set[len(set)-1]
	}
	for _, cell := range cur.Ring.Cells() {
		if validName(cell) {
			if _, err := idcodec.Format(p.Namespace, cell, p.Current, int64(top), sampleULID); err != nil {
				fs.errorf(cur.Line, "cell %s cannot mint ids: %v", cell, err)
			}
		}
	}
}

// servingEpochs maps each cell to the other non-retired epochs that still
// place shards on it, in one pass over the rings.
func servingEpochs(p *Policy) map[string][]string {
	out := map[string][]string{}
	for _, e := range p.Epochs {
		if e.Number == p.Current || e.Status == StatusRetired {
			continue
		}
		num := strconv.FormatInt(e.Number, 10)
		for _, c := range e.Ring.Cells() {
			out[c] = append(out[c], num)
		}
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// shardsAre phrases a shard set as the subject of a sentence.
func shardsAre(shards []int) string {
	if len(shards) == 1 {
		return fmt.Sprintf("shard %d is", shards[0])
	}
	return "shards " + FormatShardSet(shards) + " are"
}

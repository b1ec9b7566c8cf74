package ringfile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// cancelEvery is how many lines the parser reads between looks at its
// context: often enough to stop within milliseconds, rarely enough to cost
// nothing.
const cancelEvery = 1 << 14

// Parse reads a ring file. It rejects only what it cannot represent:
// syntax, unknown keys, duplicate fields or epochs, malformed values. All
// such errors are returned at once (joined *SyntaxError values with line
// numbers), together with what could be read. Semantic problems (a shard
// placed twice, an undeclared cell, two open epochs...) are left for
// Validate, so a faulty policy still loads and can be reported in full.
//
// Every line ends with "\n", the last one included: a file cut short (a
// partial copy, a full disk) most often ends mid-line, and a cut through a
// name or a range can leave a line that still parses, so a missing final
// newline is refused rather than guessed complete.
func Parse(file string, data []byte) (*Policy, error) {
	return ParseContext(context.Background(), file, data)
}

// ParseContext is Parse that gives up, returning ctx's error, once ctx is
// done. The work is linear in the size of the file.
func ParseContext(ctx context.Context, file string, data []byte) (*Policy, error) {
	ps := &parser{file: file, p: &Policy{File: file, Current: NoEpoch}, seen: map[string]int{}}
	lines := strings.Split(string(data), "\n")
	cut := lines[len(lines)-1] != "" // Split gives "" after a final newline
	if !cut {
		lines = lines[:len(lines)-1]
	}
	ps.un = unread{keys: map[string]bool{}, rings: map[int64]bool{}}
	for i, raw := range lines {
		if i%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ps.kind = ""
		if len(ps.errs) >= maxErrors {
			ps.errorf(i+1, "too many errors; stopping")
			ps.un.cells, ps.un.epochs = true, true // the rest is unread
			for _, key := range []string{"namespace", "shards", "revision", "current-epoch"} {
				ps.un.keys[key] = true
			}
			break
		}
		ps.line(i+1, raw)
	}
	ps.kind = ""
	if cut && len(ps.errs) < maxErrors {
		ps.errorf(len(lines), "the last line does not end with a newline: the file may have been cut short (fusee always writes one; add it if the file is complete)")
	}
	ps.finish()
	ps.legacySets()
	if len(ps.errs) > 0 {
		ps.p.unread = &ps.un
		return ps.p, errors.Join(ps.errs...)
	}
	return ps.p, nil
}

type parser struct {
	file    string
	p       *Policy
	errs    []error
	seen    map[string]int   // header key -> line
	cells   map[CellDecl]int // declaration (id, fingerprint) -> line
	magic   bool
	version int    // the format the magic line names: 1 or 2
	shards  int    // format 1's shard count
	body    bool   // a cell or epoch line has been read
	epoch   *Epoch // the epoch slot lines belong to
	// orphan: the epoch line above was refused; its slot lines are still
	// checked but kept nowhere, and not reported as outside an epoch.
	orphan bool
	kind   string // the kind of the line being read, for unread
	un     unread
}

// errorf records a syntax error on the line being read and notes what the
// policy may be missing because of it; the parse goes on with the next line.
func (ps *parser) errorf(line int, format string, args ...any) {
	ps.errs = append(ps.errs, &SyntaxError{File: ps.file, Line: line, Msg: fmt.Sprintf(format, args...)})
	switch ps.kind {
	case "namespace", "shards", "revision", "current-epoch":
		ps.un.keys[ps.kind] = true
	case "cell":
		ps.un.cells = true
	case "epoch":
		ps.un.epochs = true
	case "slot":
		if ps.epoch != nil {
			ps.un.rings[ps.epoch.Number] = true
		}
	}
}

func (ps *parser) line(n int, raw string) {
	if strings.ContainsRune(raw, '\r') {
		ps.errorf(n, "carriage return: lines must end with \\n alone")
		raw = strings.TrimRight(raw, "\r")
	}
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return
	}
	fields := strings.Fields(trimmed)
	if raw[0] == ' ' || raw[0] == '\t' {
		ps.kind = "slot"
		ps.slotLine(n, fields)
		return
	}
	ps.epoch, ps.orphan = nil, fields[0] == "epoch"
	ps.kind = fields[0]
	if !ps.magic && fields[0] != magic {
		ps.errorf(n, "the file must start with `%s %d`", magic, FormatVersion)
		ps.magic = true // report once, keep reading
	}
	switch fields[0] {
	case magic:
		ps.magicLine(n, fields)
	case "namespace", "shards", "revision", "current-epoch":
		ps.headerLine(n, fields)
	case "cell":
		ps.body = true
		ps.cellLine(n, fields)
	case "epoch":
		ps.body = true
		ps.epochLine(n, fields)
	default:
		ps.errorf(n, "unknown key %q (want namespace, shards, revision, current-epoch, cell or epoch)", fields[0])
	}
}

func (ps *parser) magicLine(n int, fields []string) {
	if first := ps.seen[magic]; first > 0 {
		ps.errorf(n, "duplicate `%s` line (first on line %d)", magic, first)
		return
	}
	ps.magic = true
	ps.seen[magic] = n
	switch {
	case len(fields) == 2 && fields[1] == "1":
		ps.version = 1
	case len(fields) == 2 && fields[1] == strconv.Itoa(FormatVersion):
		ps.version = FormatVersion
	default:
		ps.errorf(n, "unsupported format %q: this fusee reads `%s 1` and `%s %d`", strings.Join(fields, " "), magic, magic, FormatVersion)
	}
}

// headerKeys are the header lines a file of this format must have.
func (ps *parser) headerKeys() []string {
	if ps.version == 1 {
		return []string{"namespace", "shards", "revision", "current-epoch"}
	}
	return []string{"namespace", "revision", "current-epoch"}
}

// headerLine reads namespace, shards, revision or current-epoch.
func (ps *parser) headerLine(n int, fields []string) {
	key := fields[0]
	if first, dup := ps.seen[key]; dup {
		ps.errorf(n, "duplicate %s (first on line %d)", key, first)
		return
	}
	ps.seen[key] = n
	if ps.body {
		ps.errorf(n, "%s must come before the cell and epoch lines", key)
	}
	if len(fields) != 2 {
		ps.errorf(n, "%s takes one value", key)
		return
	}
	v := fields[1]
	switch key {
	case "namespace":
		ps.p.Namespace, ps.p.Lines.Namespace = v, n
		if !validName(v) {
			ps.errorf(n, "namespace %q: want %s", v, nameRule)
		}
	case "shards":
		ps.p.Lines.Shards = n
		if ps.version != 1 {
			ps.errorf(n, "`shards N` is format 1's; in `%s %d` each epoch line names its own set (`epoch N STATUS shards=0-1023`)", magic, FormatVersion)
			return
		}
		if s, ok := ps.number(n, key, v, MaxShards); ok {
			if s == 0 {
				ps.errorf(n, "shards must be at least 1")
			}
			ps.shards = int(s)
		}
	case "revision":
		ps.p.Lines.Revision = n
		if r, ok := ps.number(n, key, v, 1<<62); ok {
			ps.p.Revision = r
		}
	case "current-epoch":
		ps.p.Lines.Current = n
		if v == "none" {
			ps.p.Current = NoEpoch
		} else if e, ok := ps.number(n, key, v, 1<<62); ok {
			ps.p.Current = e
		}
	}
}

// number parses a canonical non-negative decimal (no sign, no leading
// zero) no larger than max.
func (ps *parser) number(n int, what, v string, max int64) (int64, bool) {
	x, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || v[0] == '+' || v[0] == '-' || (len(v) > 1 && v[0] == '0'):
		ps.errorf(n, "%s: %q is not a plain decimal number", what, v)
		return 0, false
	case x > max:
		ps.errorf(n, "%s: %d is larger than %d", what, x, max)
		return 0, false
	}
	return x, true
}

// cellLine reads `cell ID [fingerprint=FP]`.
func (ps *parser) cellLine(n int, fields []string) {
	if len(fields) < 2 || len(fields) > 3 {
		ps.errorf(n, "want `cell ID [fingerprint=FP]`")
		return
	}
	d := CellDecl{ID: fields[1], Line: n}
	if !validName(d.ID) {
		ps.errorf(n, "cell id %q: want %s", d.ID, nameRule)
		return
	}
	if len(fields) == 3 {
		k, v, ok := strings.Cut(fields[2], "=")
		switch {
		case !ok || k != "fingerprint":
			ps.errorf(n, "unknown cell attribute %q (want fingerprint=FP)", fields[2])
			return
		case v == "":
			ps.errorf(n, "empty fingerprint (leave the attribute out to skip the fingerprint check)")
			return
		}
		d.Fingerprint = v
	}
	key := CellDecl{ID: d.ID, Fingerprint: d.Fingerprint}
	if first, dup := ps.cells[key]; dup {
		ps.errorf(n, "duplicate declaration of cell %s (first on line %d)", d.ID, first)
		return
	}
	if ps.cells == nil {
		ps.cells = map[CellDecl]int{}
	}
	ps.cells[key] = n
	ps.p.Cells = append(ps.p.Cells, d)
}

// epochLine reads `epoch N STATUS shards=LIST` (format 1: `epoch N
// STATUS`, the set being the header's 0..S-1) and opens its ring.
func (ps *parser) epochLine(n int, fields []string) {
	want := 4
	if ps.version == 1 {
		want = 3
	}
	if len(fields) != want {
		if want == 3 {
			ps.errorf(n, "want `epoch N open|draining|retired`")
		} else {
			ps.errorf(n, "want `epoch N open|draining|retired shards=LIST` (LIST: the epoch's shards, as 0-511,1000-1023)")
		}
		return
	}
	var set []int
	if want == 4 {
		k, v, ok := strings.Cut(fields[3], "=")
		if !ok || k != "shards" {
			ps.errorf(n, "unknown epoch attribute %q (want shards=LIST)", fields[3])
			return
		}
		var err error
		if set, err = ParseShardList(v); err != nil {
			ps.errorf(n, "epoch %s: shards=: %v", fields[1], err)
			return
		}
	}
	num, ok := ps.number(n, "epoch", fields[1], 1<<62)
	if !ok {
		return
	}
	st, err := ParseStatus(fields[2])
	if err != nil || fields[2] != st.String() {
		ps.errorf(n, "epoch %d: status %q: want open, draining or retired", num, fields[2])
		return
	}
	if k := len(ps.p.Epochs); k > 0 && ps.p.Epochs[k-1].Number >= num {
		prev := ps.p.Epochs[k-1]
		if e := ps.p.Epoch(num); e != nil {
			ps.errorf(n, "duplicate epoch %d (first on line %d)", num, e.Line)
		} else {
			ps.errorf(n, "epoch %d comes after epoch %d: list epochs in ascending order", num, prev.Number)
		}
		return
	}
	ps.p.Epochs = append(ps.p.Epochs, Epoch{Number: num, Status: st, Shards: set, Line: n})
	ps.epoch, ps.orphan = &ps.p.Epochs[len(ps.p.Epochs)-1], false
}

// slotLine reads an indented `RANGE CELL[@REGION]` into the current epoch.
func (ps *parser) slotLine(n int, fields []string) {
	if ps.epoch == nil && !ps.orphan {
		ps.errorf(n, "indented slot line outside an epoch (slot lines follow an `epoch N STATUS` line)")
		return
	}
	if len(fields) != 2 {
		ps.errorf(n, "want `SHARD CELL[@REGION]` or `FIRST-LAST CELL[@REGION]`")
		return
	}
	slots, err := ParseSlot(fields[0], fields[1])
	if err != nil {
		ps.errorf(n, "%v", err)
		return
	}
	if ps.epoch == nil {
		return // the epoch line was reported; its slots have been checked
	}
	for i := range slots {
		slots[i].Line = n
	}
	ps.epoch.Ring = append(ps.epoch.Ring, slots...)
}

// finish reports what a complete file must have had.
func (ps *parser) finish() {
	if !ps.magic {
		ps.errorf(0, "empty file: a ring file starts with `%s %d`", magic, FormatVersion)
		return
	}
	for _, key := range ps.headerKeys() {
		if _, ok := ps.seen[key]; !ok {
			ps.un.keys[key] = true
			ps.errorf(0, "missing `%s` line", key)
		}
	}
}

// legacySets gives every epoch of a format 1 file the file's one shard
// set, 0..S-1. When the count could not be read the sets stay undeclared
// (Validate then checks each ring against its own shards only).
func (ps *parser) legacySets() {
	if ps.version != 1 || ps.shards == 0 {
		return
	}
	set := ShardsUpTo(ps.shards)
	for i := range ps.p.Epochs {
		ps.p.Epochs[i].Shards = set
	}
}

// ParseShardList reads a shard set as ranges joined by commas, "0-7,12,
// 16-31", the syntax of an epoch's shards= and of --add-shards: ascending
// or not, but no shard twice. The result is ascending.
func ParseShardList(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("empty shard list (want ranges such as 0-7,12)")
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, err := parseShardRange(part)
		if err != nil {
			return nil, err
		}
		for sh := lo; sh <= hi; sh++ {
			if seen[sh] {
				return nil, fmt.Errorf("shard %d is listed twice in %q", sh, s)
			}
			seen[sh] = true
			out = append(out, sh)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ParseSlot reads one slot in the ring file's and the command line's
// syntax: a shard or inclusive range ("7", "0-127") and a cell with an
// optional region ("cellA", "cellA@eu-west"). Names are checked by Validate.
func ParseSlot(shards, cell string) ([]Slot, error) {
	lo, hi, err := parseShardRange(shards)
	if err != nil {
		return nil, err
	}
	id, region, hasRegion := strings.Cut(cell, "@")
	switch {
	case id == "":
		return nil, fmt.Errorf("slot %s: empty cell id", shards)
	case hasRegion && region == "":
		return nil, fmt.Errorf("slot %s: empty region after '@' (leave the '@' out for no region)", shards)
	}
	out := make([]Slot, 0, hi-lo+1)
	for s := lo; s <= hi; s++ {
		out = append(out, Slot{Shard: s, Cell: id, Region: region})
	}
	return out, nil
}

func parseShardRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = shardNumber(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = shardNumber(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("shard range %s is reversed", s)
	}
	return lo, hi, nil
}

func shardNumber(s string) (int, error) {
	x, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] == '+' || s[0] == '-' || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("shard %q is not a plain decimal number", s)
	}
	if x >= shardLimit {
		return 0, fmt.Errorf("shard %d is far beyond any shard count (at most %d)", x, MaxShards)
	}
	return x, nil
}

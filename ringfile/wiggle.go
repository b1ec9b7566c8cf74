package ringfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The reference coordinator stores a namespace's policy as JSON. Its etcd
// value (key /wiggle/coord/policy/<namespace>) is
//
//	{"currentEpoch":1,"revision":3,"epochs":"<the epochs object, as a string>"}
//
// and its SQL stores keep the same epochs text in a column; the epochs
// object is keyed by the epoch number in decimal:
//
//	{"0":{"status":"DRAINING","ring":[{"shard":0,"cellId":"cellA","region":null}]}}
//
// ImportWiggle reads all three shapes (the value with epochs as a string,
// the value with epochs as an object, the bare epochs object) strictly:
// unknown keys, duplicate keys and non-integer numbers are errors. It does
// not validate: a stored policy with a hole in a ring imports, and
// Validate reports the hole. ExportWiggle writes the etcd value, or the
// bare epochs object, compact as the reference writes it.

// ImportOptions says what the stored JSON does not carry.
type ImportOptions struct {
	File      string // the input's name, for messages
	Namespace string // the namespace (the etcd key holds it, not the value)
	// Cells are declarations to carry over (for example with fingerprints,
	// from an existing ring file); cells the rings name that are not among
	// them are declared without a fingerprint.
	Cells []CellDecl
}

// ImportWiggle converts a stored policy to a Policy. A bare epochs object
// carries no revision (it becomes 0) and no current epoch (the OPEN epoch,
// or the newest when none is open).
func ImportWiggle(data []byte, opt ImportOptions) (*Policy, error) {
	p := &Policy{Namespace: opt.Namespace, Current: NoEpoch}
	fail := func(err error) (*Policy, error) {
		return nil, fmt.Errorf("%s%w", position(opt.File, 0), err)
	}
	fields, err := objectFields(data)
	if err != nil {
		return fail(err)
	}
	epochsRaw, valueShape := json.RawMessage(nil), false
	if len(fields) > 0 && !isDecimal(fields[0].key) {
		valueShape = true
		if epochsRaw, err = readValueShape(fields, p); err != nil {
			return fail(err)
		}
	} else {
		epochsRaw = data
	}
	if p.Epochs, err = readEpochs(epochsRaw); err != nil {
		return fail(err)
	}
	for i := range p.Epochs {
		p.Epochs[i].Shards = p.Epochs[i].Ring.ShardSet() // the set is what the ring names
	}
	if !valueShape {
		p.Current = impliedCurrent(p.Epochs)
	} else if len(p.Epochs) == 0 {
		p.Current = NoEpoch // the reference's default currentEpoch 0 means "none yet" here
	}
	for _, d := range opt.Cells {
		p.declare(CellDecl{ID: d.ID, Fingerprint: d.Fingerprint})
	}
	for _, e := range p.Epochs {
		for _, c := range e.Ring.Cells() {
			p.declare(CellDecl{ID: c})
		}
	}
	return p, nil
}

// readValueShape reads currentEpoch and revision into p and returns the
// epochs, unwrapping them when they are stored as a string.
func readValueShape(fields []field, p *Policy) (json.RawMessage, error) {
	var epochs json.RawMessage
	seen := map[string]bool{}
	for _, f := range fields {
		var err error
		switch f.key {
		case "currentEpoch":
			p.Current, err = readInt(f.value, "currentEpoch")
		case "revision":
			p.Revision, err = readInt(f.value, "revision")
		case "epochs":
			epochs = f.value
			var s string
			if len(f.value) > 0 && f.value[0] == '"' {
				if err = json.Unmarshal(f.value, &s); err == nil {
					epochs = json.RawMessage(s)
				}
			}
		default:
			err = fmt.Errorf("unknown key %q (want currentEpoch, revision and epochs)", f.key)
		}
		if err != nil {
			return nil, err
		}
		seen[f.key] = true
	}
	for _, k := range []string{"currentEpoch", "revision", "epochs"} {
		if !seen[k] {
			return nil, fmt.Errorf("missing key %q", k)
		}
	}
	return epochs, nil
}

// readEpochs reads the epochs object, sorted by epoch number.
func readEpochs(data []byte) ([]Epoch, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil // the reference reads a blank epochs text as none
	}
	fields, err := objectFields(data)
	if err != nil {
		return nil, fmt.Errorf("epochs: %w", err)
	}
	var out []Epoch
	for _, f := range fields {
		if !isDecimal(f.key) || (len(f.key) > 1 && f.key[0] == '0') {
			return nil, fmt.Errorf("epochs: key %q is not an epoch number", f.key)
		}
		num, err := strconv.ParseInt(f.key, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("epochs: key %q: %w", f.key, err)
		}
		e, err := readEpoch(num, f.value)
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", num, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Epoch) int { return cmp.Compare(a.Number, b.Number) })
	return out, nil
}

func readEpoch(num int64, data []byte) (Epoch, error) {
	e := Epoch{Number: num}
	fields, err := objectFields(data)
	if err != nil {
		return e, err
	}
	for _, f := range fields {
		switch f.key {
		case "status":
			var s string
			if err := json.Unmarshal(f.value, &s); err != nil {
				return e, fmt.Errorf("status: %w", err)
			}
			if e.Status, err = ParseStatus(s); err != nil || s != strings.ToUpper(s) {
				return e, fmt.Errorf("status %q: want OPEN, DRAINING or RETIRED", s)
			}
		case "ring":
			if e.Ring, err = readRing(f.value); err != nil {
				return e, err
			}
		default:
			return e, fmt.Errorf("unknown key %q (want status and ring)", f.key)
		}
	}
	if e.Status == 0 {
		return e, errors.New("missing status")
	}
	return e, nil
}

func readRing(data []byte) (Ring, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	ring := make(Ring, 0, len(items))
	for i, raw := range items {
		s, err := readSlot(raw)
		if err != nil {
			return nil, fmt.Errorf("ring slot %d: %w", i, err)
		}
		ring = append(ring, s)
	}
	return ring, nil
}

func readSlot(data []byte) (Slot, error) {
	var s Slot
	fields, err := objectFields(data)
	if err != nil {
		return s, err
	}
	var hasShard, hasCell bool
	for _, f := range fields {
		switch f.key {
		case "shard":
			n, err := readInt(f.value, "shard")
			if err != nil {
				return s, err
			}
			if n >= shardLimit {
				return s, fmt.Errorf("shard %d is far beyond any shard count", n)
			}
			s.Shard, hasShard = int(n), true
		case "cellId":
			if err := json.Unmarshal(f.value, &s.Cell); err != nil {
				return s, fmt.Errorf("cellId: %w", err)
			}
			hasCell = true
		case "region":
			var r *string
			if err := json.Unmarshal(f.value, &r); err != nil {
				return s, fmt.Errorf("region: %w", err)
			}
			if r != nil {
				s.Region = *r
			}
		default:
			return s, fmt.Errorf("unknown key %q (want shard, cellId and region)", f.key)
		}
	}
	if !hasShard || !hasCell {
		return s, errors.New("a slot needs shard and cellId")
	}
	return s, nil
}

// impliedCurrent is the current epoch of a bare epochs object.
func impliedCurrent(epochs []Epoch) int64 {
	if len(epochs) == 0 {
		return NoEpoch
	}
	for _, e := range epochs {
		if e.Status == StatusOpen {
			return e.Number
		}
	}
	return epochs[len(epochs)-1].Number
}

// field is one key of a JSON object, in order of appearance.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields reads one JSON object's keys in order, refusing duplicates
// (encoding/json would silently keep the last) and trailing data.
func objectFields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object (%v)", errOr(err, "got something else"))
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		out = append(out, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return out, nil
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}

// readInt reads a JSON integer (no fraction, no exponent).
func readInt(v json.RawMessage, what string) (int64, error) {
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %s is not a non-negative integer", what, s)
	}
	return n, nil
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ExportWiggle writes p as the reference stores it: the etcd value, or with
// epochsOnly the bare epochs object (the SQL stores' column). Compact, keys
// in the reference's order, epochs ascending, a newline at the end.
func ExportWiggle(p *Policy, epochsOnly bool) []byte {
	epochs := wiggleEpochs(p)
	if epochsOnly {
		return append(epochs, '\n')
	}
	current := p.Current
	if current == NoEpoch {
		current = 0 // the reference's value for a namespace with no epoch
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"currentEpoch":%d,"revision":%d,"epochs":`, current, p.Revision)
	writeJavaString(&b, string(epochs))
	b.WriteString("}\n")
	return b.Bytes()
}

func wiggleEpochs(p *Policy) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range p.Epochs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":{"status":"%s","ring":[`, e.Number, strings.ToUpper(e.Status.String()))
		for j, s := range e.Ring {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"shard":%d,"cellId":`, s.Shard)
			writeJavaString(&b, s.Cell)
			b.WriteString(`,"region":`)
			if s.Region == "" {
				b.WriteString("null")
			} else {
				writeJavaString(&b, s.Region)
			}
			b.WriteByte('}')
		}
		b.WriteString("]}")
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeJavaString quotes s as the reference's JSON writer does: only the
// quote, the backslash and control characters are escaped (encoding/json
// would also escape <, > and &, and the bytes would differ).
func writeJavaString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

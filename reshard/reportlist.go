package reshard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A List is one of the report's lists that grow with the directory:
// renumbered_unfinished (List[RenumberedRun]) and token_changes
// (List[TokenChange]), one entry per renumbered unfinished run or pending
// completion, a million or more at 10M runs; and a plan's renumbered runs
// (List[PlannedRun], Plan). Its entries live in a spill
// map with a share of the memory budget: in memory while they fit it, in
// a scratch store once they outgrow it. That store is outside the data
// directory (under Options.Scratch, else the system temporary directory),
// since the report outlives the switch; it is created only if the list
// spills, and Close (Report.Close) deletes it.
//
// Each gives the entries back in the list's order, which does not depend
// on whether it spilled; MarshalJSON renders them as the JSON array of a
// slice of them would be rendered (whole, in memory: for small lists and
// tests), Report.WriteJSON streams them. A nil *List renders as null, as
// a nil slice does. A List is not safe for concurrent use.
type List[T any] struct {
	m      *spillMap // nil: always empty
	n      int64
	seq    uint64
	kb, vb []byte
}

// newList is an empty list whose entries spill into a scratch store at
// dir once they hold more than budget bytes.
func newList[T any](fs vfs.FS, dir string, budget int64) *List[T] {
	return &List[T]{m: newSpillMap(fs, dir, max(budget, 1))}
}

// newReportLists gives rep its two lists, spilling (if they spill) under
// base ("": the system temporary directory) with their share of budget.
func newReportLists(fs vfs.FS, rep *Report, base string, budget int64) {
	stem := listStem(fs, base)
	share := budget / mapShare / listShare
	rep.Renumbered = newList[RenumberedRun](fs, stem+"-renumbered", share)
	rep.Tokens = newList[TokenChange](fs, stem+"-tokens", share)
}

// listStem is where lists spill under base ("": the system temporary
// directory), each at the stem and a suffix of its own.
func listStem(fs vfs.FS, base string) string {
	if base == "" {
		base = os.TempDir()
	}
	return fs.PathJoin(base, "fusee-reshard-report-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
}

// emptyLists gives rep two lists that stay empty.
func emptyLists(rep *Report) {
	rep.Renumbered, rep.Tokens = &List[RenumberedRun]{}, &List[TokenChange]{}
}

// Len is the number of entries.
func (l *List[T]) Len() int64 {
	if l == nil {
		return 0
	}
	return l.n
}

// add appends item: the list is in the order of its keys, order (empty:
// none) and then the order of the adds.
func (l *List[T]) add(order []byte, item T) error {
	if l == nil || l.m == nil {
		return errors.New("internal error: an entry added to a report list that has no storage")
	}
	l.seq++
	l.kb = binary.BigEndian.AppendUint64(append(l.kb[:0], order...), l.seq)
	l.vb = encodeListItem(l.vb[:0], &item)
	if err := l.m.Put(l.kb, l.vb); err != nil {
		return fmt.Errorf("keeping the report's list: %w", err)
	}
	l.n++
	return nil
}

// Each calls fn with every entry, in order; the entry is valid only
// during the call.
func (l *List[T]) Each(fn func(*T) error) error {
	if l == nil || l.m == nil {
		return nil
	}
	var item T
	return l.m.Each(nil, func(_, v []byte) error {
		if err := decodeListItem(v, &item); err != nil {
			return err
		}
		return fn(&item)
	})
}

// items is the entries as an iterator (for iter.Pull2: walking the list
// alongside something else); an error of the list comes last.
func (l *List[T]) items() iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		err := l.Each(func(it *T) error {
			if !yield(it, nil) {
				return errEnough
			}
			return nil
		})
		if err != nil && err != errEnough {
			yield(nil, err)
		}
	}
}

// errEnough stops an Each early.
var errEnough = errors.New("enough")

// Head returns the first n entries (fewer if the list is shorter).
func (l *List[T]) Head(n int) ([]T, error) {
	var out []T
	if n <= 0 {
		return out, nil
	}
	err := l.Each(func(it *T) error {
		out = append(out, *it)
		if len(out) == n {
			return errEnough
		}
		return nil
	})
	if err == errEnough {
		err = nil
	}
	return out, err
}

// MarshalJSON renders the whole list as a JSON array, in memory.
func (l *List[T]) MarshalJSON() ([]byte, error) {
	all, err := l.all()
	if err != nil {
		return nil, err
	}
	return json.Marshal(all)
}

// Close deletes the list's scratch store, if it spilled, and empties it.
func (l *List[T]) Close() error {
	if l == nil || l.m == nil {
		return nil
	}
	err := l.m.Close()
	l.m, l.n = nil, 0
	return err
}

// The entries' encoding in the spill map: each field in order, strings
// as a uvarint length and their bytes, integers as varints.

func encodeListItem[T any](b []byte, item *T) []byte {
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	switch it := any(item).(type) {
	case *RenumberedRun:
		str(it.WorkflowID)
		b = binary.AppendVarint(b, int64(it.OldShard))
		b = binary.AppendUvarint(b, it.OldRun)
		b = binary.AppendVarint(b, int64(it.NewShard))
		b = binary.AppendUvarint(b, it.NewRun)
		str(it.OldKey)
		str(it.NewKey)
		b = binary.AppendUvarint(b, uint64(len(it.Tokens)))
		for _, t := range it.Tokens {
			b = binary.AppendUvarint(b, uint64(t.Position))
			str(t.Old)
			str(t.New)
		}
	case *TokenChange:
		str(it.WorkflowID)
		b = binary.AppendUvarint(b, uint64(it.Position))
		str(it.Old)
		str(it.New)
	case *PlannedRun:
		str(it.WorkflowID)
		b = binary.AppendUvarint(b, uint64(it.Gen))
		str(it.State)
		b = binary.AppendVarint(b, int64(it.OldShard))
		b = binary.AppendUvarint(b, it.OldRun)
		b = binary.AppendVarint(b, int64(it.NewShard))
		b = binary.AppendUvarint(b, it.NewRun)
		str(it.OldKey)
		str(it.NewKey)
	default:
		panic(fmt.Sprintf("reshard: no list encoding for %T", item))
	}
	return b
}

// listReader reads an encoded entry; the first failure sticks.
type listReader struct {
	b   []byte
	bad bool
}

func (r *listReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *listReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *listReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func decodeListItem[T any](v []byte, item *T) error {
	r := &listReader{b: v}
	switch it := any(item).(type) {
	case *RenumberedRun:
		*it = RenumberedRun{WorkflowID: r.str(), OldShard: int(r.varint()), OldRun: r.uvarint(),
			NewShard: int(r.varint()), NewRun: r.uvarint(), OldKey: r.str(), NewKey: r.str()}
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.bad = true
			n = 0
		}
		it.Tokens = make([]RunToken, 0, n)
		for range n {
			it.Tokens = append(it.Tokens, RunToken{Position: uint32(r.uvarint()), Old: r.str(), New: r.str()})
		}
	case *TokenChange:
		*it = TokenChange{WorkflowID: r.str(), Position: uint32(r.uvarint()), Old: r.str(), New: r.str()}
	case *PlannedRun:
		*it = PlannedRun{WorkflowID: r.str(), Gen: uint32(r.uvarint()), State: r.str(), OldShard: int(r.varint()),
			OldRun: r.uvarint(), NewShard: int(r.varint()), NewRun: r.uvarint(), OldKey: r.str(), NewKey: r.str()}
	default:
		panic(fmt.Sprintf("reshard: no list encoding for %T", item))
	}
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("internal error: a damaged entry of the report's list in its scratch store (%d bytes)", len(v))
	}
	return nil
}

// renumberedOrder is the order of the renumbered_unfinished list: by new
// shard, then new number.
func renumberedOrder(shard int, no uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint16(nil, uint16(shard)), no)
}

// Close deletes the scratch stores of the report's lists and of its
// plan's, if they spilled, and closes the file its lists are copied from
// (keepLists): call it once the report (and plan) has been written.
func (rep *Report) Close() error {
	err := errors.Join(rep.closeKept(), rep.Renumbered.Close(), rep.Tokens.Close())
	if rep.Plan != nil {
		err = errors.Join(err, rep.Plan.Close())
	}
	return err
}

// closeOnError closes rep's lists when *err is set: the report is not
// returned, and whatever they spilled goes.
func closeOnError(rep *Report, err *error) {
	if *err != nil {
		_ = rep.Close()
	}
}

// all returns every entry, in memory (a plan file holds them so; tests).
func (l *List[T]) all() ([]T, error) {
	out := make([]T, 0, min(l.Len(), 1<<16))
	err := l.Each(func(it *T) error {
		out = append(out, *it)
		return nil
	})
	return out, err
}

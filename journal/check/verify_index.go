package check

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"iter"
	"slices"
	"sort"

	"github.com/fusee-dev/fusee/journal/model"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Join prefixes of a shard's spill map (see verify.go).
const (
	joinIndex  = 'I'
	joinTimer  = 'T'
	joinOutbox = 'P'
	joinSeq    = 'S'
)

// joinRun puts what the joins need of one run into the shard's map: its
// identity under its workflow ID, the timers its journal implies and the
// messages its history produces; and checks its records' message IDs.
func (v *verifier) joinRun(s *sh, key model.RunNo, r *model.Run, h []model.Record) {
	put := func(k, val []byte) {
		if err := s.join.Put(k, val); err != nil {
			v.fail(err)
		}
	}
	k := appendStr([]byte{joinIndex}, r.WorkflowID)
	k = append(k, 1)
	k = appendU64(appendU64(k, uint64(r.No)), uint64(key))
	renum := byte(0)
	if r.Renumbered {
		renum = 1
	}
	put(k, append(appendU32(nil, r.Gen), byte(r.State), renum))
	for _, t := range model.PendingTimers(r) {
		put(append(timerJoinKey(t), 0), nil)
	}
	for _, m := range produces(s.Index, r, h) {
		v.seq++
		k := appendStr([]byte{joinOutbox}, m.ID)
		k = append(k, 0)
		k = appendU64(appendU64(k, uint64(r.No)), v.seq)
		if _, ok := s.stored[m.ID]; ok || s.storedAll {
			put(k, encodeMsg(nil, &m))
		} else {
			put(k, nil) // no stored message to compare: the ID and run suffice
		}
	}
	recordMsgIDs(v.addf, v.place(s), r, h)
}

func timerJoinKey(t model.TimerKey) []byte {
	return appendI64(appendU32(appendU64([]byte{joinTimer}, uint64(t.Run)), t.Pos), t.At)
}

// joined is one run of a workflow ID in the index join.
type joined struct {
	no, key    model.RunNo
	gen        uint32
	state      model.RunState
	renumbered bool
}

// index checks the ID index and the generations of each workflow ID: the
// runs of one ID are generations 1..k with no gap or repeat, numbered in
// generation order except where a reshard renumbered a run, all finished
// but the latest, and the index points at the latest (the highest
// generation). The runs of each ID, put into the shard's map as they
// passed, are read back in workflow ID order and merged with the shard's
// index, which streams in the same order (both sort by the ID's bytes).
func (v *verifier) index(s *sh) error {
	var srcErr error
	next, stop := iter.Pull2(func(yield func(string, model.RunNo) bool) {
		srcErr = s.src.index(func(wf string, no model.RunNo) error {
			if !yield(wf, no) {
				return errIndexStopped
			}
			return nil
		})
		if errors.Is(srcErr, errIndexStopped) {
			srcErr = nil
		}
	})
	defer stop()
	// The index entry not merged yet (pok), its ID as the map encodes it.
	var pid []byte
	var pwf string
	var pno model.RunNo
	pok := false
	advance := func() {
		if pwf, pno, pok = next(); pok {
			pid = appendStr(append(pid[:0], joinIndex), pwf)
		}
	}
	advance()
	// alone checks the index entries that sort before upTo (nil: all of
	// those left): IDs the shard has no run of.
	alone := func(upTo []byte) error {
		for pok && (upTo == nil || bytes.Compare(pid, upTo) < 0) {
			if err := v.indexID(s, pwf, nil, pno, true); err != nil {
				return err
			}
			advance()
		}
		return nil
	}
	var cur []byte // the workflow ID, as encoded
	var id string
	var runs []joined
	var entry model.RunNo
	hasEntry := false
	flush := func() error {
		if cur != nil {
			if err := v.indexID(s, id, runs, entry, hasEntry); err != nil {
				return err
			}
		}
		runs, hasEntry = runs[:0], false
		return nil
	}
	err := s.join.Each([]byte{joinIndex}, func(k, val []byte) error {
		e := 1 + strEnd(k[1:])
		if len(k) != e+17 || k[e] != 1 || len(val) != 6 {
			return errors.New("check: a damaged index join entry")
		}
		if !bytes.Equal(k[:e], cur) {
			if err := flush(); err != nil {
				return err
			}
			if err := alone(k[:e]); err != nil {
				return err
			}
			cur = append(cur[:0], k[:e]...)
			var err error
			if id, _, err = cutStr(k[1:]); err != nil {
				return err
			}
			if pok && bytes.Equal(pid, cur) {
				entry, hasEntry = pno, true
				advance()
			}
		}
		runs = append(runs, joined{no: model.RunNo(binary.BigEndian.Uint64(k[e+1:])), key: model.RunNo(binary.BigEndian.Uint64(k[e+9:])),
			gen: binary.BigEndian.Uint32(val), state: model.RunState(val[4]), renumbered: val[5] == 1})
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = alone(nil)
	}
	if err != nil {
		return err
	}
	return srcErr
}

var errIndexStopped = errors.New("check: index merge stopped")

// indexID checks one workflow ID: its runs in run-number order and its
// index entry, if it has one.
func (v *verifier) indexID(s *sh, id string, runs []joined, no model.RunNo, hasEntry bool) error {
	var named *joined // the run stored under the entry's number, if it is one of id's
	for i := range runs {
		if runs[i].key == no {
			named = &runs[i]
		}
	}
	if len(runs) > 0 {
		latest := generationRules(v.addf, s.Index, id, runs)
		indexEntryRules(v.addf, s.Index, id, latest, no, hasEntry, named)
	}
	if !hasEntry || named != nil {
		return nil
	}
	_, ok, err := s.src.entry(no)
	switch {
	case err != nil:
		return err
	case !ok:
		v.addf(KindIndexMissingRun, s.Index, no, "the index entry for %q names run %d, which the shard does not have", id, no)
	default: // a run of another workflow ID: id's are all in runs
		v.addf(KindIndexWrongID, s.Index, no, "the index entry for %q names a run of %q", id, v.workflowOf(s, no))
	}
	return nil
}

// workflowOf is the workflow ID of the run stored under no.
func (v *verifier) workflowOf(s *sh, no model.RunNo) string {
	r, ok, err := s.src.entry(no)
	if err != nil {
		v.fail(err)
	}
	if !ok {
		return ""
	}
	return r.WorkflowID
}

// generationRules checks the runs of workflow ID id on shard, in run
// number order (at least one): generations 1..k with no gap or repeat,
// numbered in generation order except where a reshard renumbered a run
// (genOrder), all finished but the latest, which it returns. The
// streaming verifier and the whole-memory oracle of the tests both make
// these rules; they gather the runs each in its own way.
func generationRules(addf addFinding, shard int, id string, runs []joined) joined {
	genOrder(addf, shard, id, runs)
	byGen := slices.Clone(runs)
	sort.SliceStable(byGen, func(a, b int) bool { return byGen[a].gen < byGen[b].gen })
	want := uint32(1)
	for i, r := range byGen {
		switch {
		case i > 0 && r.gen == byGen[i-1].gen:
			addf(KindGenDuplicate, shard, r.no, "workflow %q generation %d is also run %d", id, r.gen, byGen[i-1].no)
			continue
		case r.gen != want:
			addf(KindGenGap, shard, r.no, "workflow %q has generation %d where %d is expected", id, r.gen, want)
		}
		want = r.gen + 1
	}
	latest := byGen[len(byGen)-1]
	for _, r := range byGen[:len(byGen)-1] {
		if r.state == model.StateRunning || r.state == model.StateParked {
			addf(KindSupersededActive, shard, r.no, "workflow %q generation %d is %s but generation %d (run %d) is newer",
				id, r.gen, r.state, latest.gen, latest.no)
		}
	}
	return latest
}

// indexEntryRules checks workflow ID id's index entry (hasEntry: it has
// one, naming run no) against its latest run: named is id's run stored
// under no, nil when no holds none of id's runs.
func indexEntryRules(addf addFinding, shard int, id string, latest joined, no model.RunNo, hasEntry bool, named *joined) {
	switch {
	case !hasEntry:
		addf(KindIndexMissingID, shard, latest.no, "workflow %q has no index entry", id)
	case no != latest.no && named != nil:
		addf(KindIndexNotLatest, shard, no, "the index names generation %d of %q, the latest is generation %d (run %d)",
			named.gen, id, latest.gen, latest.no)
	}
}

// genOrder reports a pair of runs of one workflow ID whose run numbers
// are in the opposite order of their generations, unless a reshard
// renumbered either of them: a renumbered run gets a number above every
// number its old shard used, so it legitimately counts as newer than it
// is. Among the runs that kept their numbers the order must hold, and it
// holds for every pair exactly when it holds for each neighbour in run
// number order, which is what is checked.
func genOrder(addf addFinding, shard int, id string, runs []joined) {
	var prev *joined
	for i := range runs { // in run-number order
		r := &runs[i]
		if r.renumbered {
			continue
		}
		if prev != nil && r.gen < prev.gen {
			addf(KindGenOrder, shard, r.no, "workflow %q generation %d has a higher run number than generation %d (run %d), and neither was renumbered",
				id, r.gen, prev.gen, prev.no)
		}
		prev = r
	}
}

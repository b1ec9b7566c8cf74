package check

import (
	"bytes"
	"cmp"
	"encoding/binary"
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
		put(appendU64(appendU64(k, uint64(r.No)), v.seq), encodeMsg(nil, &m))
	}
	v.recordMsgIDs(s, r, h)
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
// generation). The index entries and the runs of each ID meet in the
// shard's map, the entry first.
func (v *verifier) index(s *sh) error {
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
	err := s.src.index(func(wf string, no model.RunNo) error {
		k := append(appendStr([]byte{joinIndex}, wf), 0)
		return s.join.Put(k, appendU64(nil, uint64(no)))
	})
	if err != nil {
		return err
	}
	err = s.join.Each([]byte{joinIndex}, func(k, val []byte) error {
		e := 1 + strEnd(k[1:])
		if !bytes.Equal(k[:e], cur) {
			if err := flush(); err != nil {
				return err
			}
			cur = append(cur[:0], k[:e]...)
			var err error
			if id, _, err = cutStr(k[1:]); err != nil {
				return err
			}
		}
		if k[e] == 0 {
			entry, hasEntry = model.RunNo(binary.BigEndian.Uint64(val)), true
			return nil
		}
		runs = append(runs, joined{no: model.RunNo(binary.BigEndian.Uint64(k[e+1:])), key: model.RunNo(binary.BigEndian.Uint64(k[e+9:])),
			gen: binary.BigEndian.Uint32(val), state: model.RunState(val[4]), renumbered: val[5] == 1})
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

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
		v.genOrder(s, id, runs)
		byGen := slices.Clone(runs)
		sort.SliceStable(byGen, func(a, b int) bool { return byGen[a].gen < byGen[b].gen })
		want := uint32(1)
		for i, r := range byGen {
			switch {
			case i > 0 && r.gen == byGen[i-1].gen:
				v.addf(KindGenDuplicate, s.Index, r.no, "workflow %q generation %d is also run %d", id, r.gen, byGen[i-1].no)
				continue
			case r.gen != want:
				v.addf(KindGenGap, s.Index, r.no, "workflow %q has generation %d where %d is expected", id, r.gen, want)
			}
			want = r.gen + 1
		}
		latest := byGen[len(byGen)-1]
		for _, r := range byGen[:len(byGen)-1] {
			if r.state == model.StateRunning || r.state == model.StateParked {
				v.addf(KindSupersededActive, s.Index, r.no, "workflow %q generation %d is %s but generation %d (run %d) is newer",
					id, r.gen, r.state, latest.gen, latest.no)
			}
		}
		switch {
		case !hasEntry:
			v.addf(KindIndexMissingID, s.Index, latest.no, "workflow %q has no index entry", id)
		case no != latest.no && named != nil:
			v.addf(KindIndexNotLatest, s.Index, no, "the index names generation %d of %q, the latest is generation %d (run %d)",
				named.gen, id, latest.gen, latest.no)
		}
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

// genOrder reports a pair of runs of one workflow ID whose run numbers
// are in the opposite order of their generations, unless a reshard
// renumbered either of them: a renumbered run gets a number above every
// number its old shard used, so it legitimately counts as newer than it
// is. Among the runs that kept their numbers the order must hold, and it
// holds for every pair exactly when it holds for each neighbour in run
// number order, which is what is checked.
func (v *verifier) genOrder(s *sh, id string, runs []joined) {
	var prev *joined
	for i := range runs { // in run-number order
		r := &runs[i]
		if r.renumbered {
			continue
		}
		if prev != nil && r.gen < prev.gen {
			v.addf(KindGenOrder, s.Index, r.no, "workflow %q generation %d has a higher run number than generation %d (run %d), and neither was renumbered",
				id, r.gen, prev.gen, prev.no)
		}
		prev = r
	}
}

package check

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// How verify resolves references. A reference names a run of any shard,
// usually not the one being checked, so resolving each as its run passes
// would be a random read of another store (most of verify's reading at a
// million runs). Instead each reference that needs a read is put, as its
// run passes, into one spill map (verifier.refs) keyed by what it needs
// read (the target's slot, run number and record position) and valued by
// what the check needs of the run that refers (its shard, number, workflow
// ID and generation and the fields of the referring record); the outbox's
// senders go in the same way. Once every shard's runs have passed, each
// target shard's part of the map is read in key order, so the store is
// read in key order, once per run and position however many refer to it,
// and each check is finished (refCheck) as it would have been at once.
// Memory is the map's share of the budget. The findings are the same
// either way: they are sorted as they are reported (view.pointRefs makes
// the lookups immediate, the oracle the tests compare the join with).

// refCheck is what a resolved reference is checked for.
type refCheck uint8

const (
	refSender refCheck = iota + 1 // a signal's or cancel's sender (By)
	refCaller                     // an update's caller (Parent, with ParentID)
	refParent                     // a child's parent and its Child record
	refPred                       // a Start's predecessor
	refNext                       // a Done's next run and its Start record
	refOutbox                     // a stored message's sender
)

// refWhat names a reference in findings.
var refWhat = map[refCheck]string{refSender: "sender", refCaller: "caller", refParent: "parent", refPred: "predecessor", refNext: "next run"}

// refOf is the reference rec holds for check c.
func refOf(c refCheck, rec *model.Record) model.RunRef {
	switch c {
	case refSender:
		return rec.By
	case refCaller, refParent:
		return rec.Parent.RunRef()
	case refPred:
		return rec.Pred
	}
	return rec.Next
}

// refer resolves ref, held by record rec of run r, for check c, and
// finishes the check: at once when the answer needs no read (NoSuchRun,
// a shard that does not exist) or the view resolves by point lookups,
// else through the join. pos is the record of the target's history the
// check needs (-1: none).
func (v *verifier) refer(s *sh, r *model.Run, rec *model.Record, c refCheck, ref model.RunRef, pos int) {
	slot, ok := v.w.byIndex[ref.Shard]
	if v.w.pointRefs || !ok || ref.Run == model.NoSuchRun {
		t, res, err := v.w.lookup(ref.Shard, ref.Run, pos)
		if err != nil {
			v.fail(err)
			return
		}
		v.landed(s, r, rec, c, t, res)
		return
	}
	val := append(v.val[:0], byte(c))
	val = binary.AppendUvarint(val, uint64(s.slot))
	val = binary.AppendUvarint(val, uint64(r.No))
	val = appendStr(val, r.WorkflowID)
	val = binary.AppendUvarint(val, uint64(r.Gen))
	val = append(val, byte(rec.Kind), byte(rec.Origin))
	val = binary.AppendUvarint(val, uint64(rec.Pos))
	val = appendRef(val, rec.By)
	val = appendRef(val, rec.Parent.RunRef())
	val = binary.AppendUvarint(val, uint64(rec.Parent.Pos))
	val = appendStr(val, rec.ParentID)
	val = appendRef(val, rec.Pred)
	val = appendRef(val, rec.Next)
	v.val = val
	v.deferRef(slot, ref.Run, pos, val)
}

// deferSender puts the sender of a stored message of shard s into the
// join (see sender for the rest).
func (v *verifier) deferSender(s *sh, id string, from model.RunRef, unproduced bool, diff string) {
	val := append(v.val[:0], byte(refOutbox))
	val = binary.AppendUvarint(val, uint64(s.slot))
	val = appendStr(val, id)
	val = appendRef(val, from)
	if unproduced {
		val = append(val, 1)
	} else {
		val = append(val, 0)
	}
	val = append(val, diff...)
	v.val = val
	v.deferRef(s.slot, from.Run, -1, val)
}

func (v *verifier) deferRef(slot int, no model.RunNo, pos int, val []byte) {
	var err error
	if v.key, err = v.shared.refs.add(v.key, slot, no, pos, val); err != nil {
		v.fail(err)
	}
}

// landed finishes check c of a reference once it is resolved (t, res).
func (v *verifier) landed(s *sh, r *model.Run, rec *model.Record, c refCheck, t target, res resolution) {
	v.report(s, r, rec, refWhat[c], refOf(c, rec), t, res)
	if t.r == nil {
		return
	}
	switch c {
	case refCaller:
		callerIs(v.about(s, r), rec, t.r)
	case refParent:
		parentLands(v.about(s, r), r, rec, t)
	case refPred:
		predecessorIs(v.about(s, r), r, rec, t.r)
	case refNext:
		nextLands(v.about(s, r), s.Index, r, rec, t)
	}
}

// joinRefs finishes every check deferred into the join (refJoin.resolve).
func (v *verifier) joinRefs() error {
	return v.shared.refs.resolve(v.ctx, v.w.joinProgress, func() func(target, resolution, []byte) error {
		sv := v.forShard()
		return func(t target, res resolution, val []byte) error {
			if err := sv.finishRef(t, res, val); err != nil {
				return err
			}
			return sv.err
		}
	})
}

// refJoin is the sorted join of references verify and dump share: each
// reference is put in (add) keyed by what it needs read, the target's
// slot, run number and record position, with a value the caller decodes
// again; resolve then reads each target slot's part in key order, one
// lookup per run and position however many refer to it, and hands each
// value with what was read to the caller's finisher. Safe for concurrent
// add; resolve runs once every add is done.
type refJoin struct {
	w   *view
	mu  sync.Mutex // over m and seq
	m   *store.SpillMap
	seq uint64 // keeps keys unique
}

// add puts val into the join for run no (record pos, -1: none) of the
// source in slot. key is scratch space, returned for reuse.
func (j *refJoin) add(key []byte, slot int, no model.RunNo, pos int, val []byte) ([]byte, error) {
	k := appendU32(key[:0], uint32(slot))
	k = appendU64(k, uint64(no))
	k = appendI64(k, int64(pos))
	j.mu.Lock()
	j.seq++
	k = appendU64(k, j.seq)
	err := j.m.Put(k, val)
	j.mu.Unlock()
	return k, err
}

// resolve reads each slot's part of the join in key order, slots on
// several goroutines at once (workers()); each goroutine gets a finisher
// from newFinisher and calls it with every value and what its lookup
// found. The first error a finisher returns ends the join.
//
// progress, when not nil, is told how many slots of how many are resolved:
// 0 before the first, then each as it ends.
func (j *refJoin) resolve(ctx context.Context, progress func(done, total int), newFinisher func() func(target, resolution, []byte) error) error {
	total := 0
	for _, src := range j.w.srcs {
		if src != nil {
			total++
		}
	}
	if progress != nil {
		progress(0, total)
	}
	if err := j.m.Settle(); err != nil {
		return err
	}
	produce := func(emit func(int) error) error {
		for slot, src := range j.w.srcs {
			if src == nil {
				continue
			}
			if err := emit(slot); err != nil {
				return err
			}
		}
		return nil
	}
	work := func(_ int, slot int) (struct{}, error) {
		return struct{}{}, j.resolveSlot(ctx, slot, newFinisher())
	}
	done := 0
	return inOrder(workers(), produce, work, func(struct{}) error {
		if done++; progress != nil {
			progress(done, total)
		}
		return nil
	})
}

// resolveSlot is resolve for the part of the join on slot.
func (j *refJoin) resolveSlot(ctx context.Context, slot int, finish func(target, resolution, []byte) error) error {
	var t target
	var res resolution
	var have bool
	var last []byte // the slot, run and position last read
	n := 0
	return j.m.Each(appendU32(nil, uint32(slot)), func(k, val []byte) error {
		if n++; n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) != 28 {
			return errDamagedJoin
		}
		if !have || string(k[:20]) != string(last) {
			no := model.RunNo(binary.BigEndian.Uint64(k[4:]))
			pos := int(int64(binary.BigEndian.Uint64(k[12:]) ^ (1 << 63)))
			var err error
			if t, res, err = j.w.lookupSlot(slot, no, pos); err != nil {
				return err
			}
			have, last = true, append(last[:0], k[:20]...)
		}
		return finish(t, res, val)
	})
}

var errDamagedJoin = errors.New("check: a damaged reference join entry")

// finishRef decodes what refer or deferSender put into the join and
// finishes the check with the target read (t, res).
func (v *verifier) finishRef(t target, res resolution, val []byte) error {
	d := joinDecoder{b: val}
	c := refCheck(d.byte())
	from := int(d.uvarint())
	if d.bad || from >= len(v.w.srcs) {
		return errDamagedJoin
	}
	s := &sh{slot: from, shardInfo: v.w.infos[from]}
	if c == refOutbox {
		id := d.str()
		ref := d.ref()
		unproduced := d.byte() == 1
		if d.bad {
			return errDamagedJoin
		}
		var r *model.Run
		if res == resolved {
			r = t.r
		}
		senderRules(v.addf, v.place(s), id, ref, r, unproduced, string(d.b))
		return nil
	}
	r := &model.Run{}
	rec := &model.Record{}
	r.No = model.RunNo(d.uvarint())
	r.WorkflowID = d.str()
	r.Gen = uint32(d.uvarint())
	rec.Kind, rec.Origin = model.Kind(d.byte()), model.Origin(d.byte())
	rec.Pos = uint32(d.uvarint())
	rec.By = d.ref()
	p := d.ref()
	rec.Parent = model.ParentRef{Shard: p.Shard, Run: p.Run, Pos: uint32(d.uvarint())}
	rec.ParentID = d.str()
	rec.Pred = d.ref()
	rec.Next = d.ref()
	if d.bad || len(d.b) != 0 || refWhat[c] == "" {
		return errDamagedJoin
	}
	v.landed(s, r, rec, c, t, res)
	return nil
}

func appendRef(b []byte, ref model.RunRef) []byte {
	return binary.AppendUvarint(binary.AppendVarint(b, int64(ref.Shard)), uint64(ref.Run))
}

// joinDecoder reads a join value; bad is set once it runs short.
type joinDecoder struct {
	b   []byte
	bad bool
}

func (d *joinDecoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *joinDecoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *joinDecoder) ref() model.RunRef {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return model.RunRef{}
	}
	d.b = d.b[n:]
	return model.RunRef{Shard: int(x), Run: model.RunNo(d.uvarint())}
}

func (d *joinDecoder) str() string {
	s, rest, err := cutStr(d.b)
	if err != nil {
		d.bad = true
		return ""
	}
	d.b = rest
	return s
}

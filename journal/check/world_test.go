package check

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// This file builds valid states for the tests: a world is a set of shards
// changed only through Apply, driven by logical operations that name runs
// by (workflow ID, generation). The same operations on worlds with
// different shard counts (and different holes in their run numbers) give
// the same logical content under different physical layouts, which is
// what the dump's invariance test needs; every state a world reaches is
// one the engine could reach, which is what Verify's no-false-findings
// tests need.

type ident struct {
	id  string
	gen uint32
}

func (x ident) String() string { return fmt.Sprintf("%s#%d", x.id, x.gen) }

type world struct {
	tb     testing.TB
	n      int
	shards []*model.Shard
	phys   map[ident]model.RunRef
	gens   map[string]uint32
	gaps   *rand.Rand        // physical only: holes in run numbering; nil for none
	log    []journal.ShardOp // every op applied, in order (for replay into a real directory)
}

func newWorld(tb testing.TB, n int, gapSeed uint64) *world {
	w := &world{tb: tb, n: n, phys: map[ident]model.RunRef{}, gens: map[string]uint32{}}
	for i := range n {
		w.shards = append(w.shards, model.NewShard(i, n))
	}
	if gapSeed != 0 {
		w.gaps = rand.New(rand.NewPCG(gapSeed, 7))
	}
	return w
}

func (w *world) state() *State { return FromShards(w.shards) }

func (w *world) shardOf(id string) *model.Shard { return w.shards[model.ShardOf(id, w.n)] }

func (w *world) apply(s *model.Shard, op model.Op) {
	w.tb.Helper()
	if err := s.Apply(&op); err != nil {
		w.tb.Fatalf("shard %d: %v", s.Index, err)
	}
	w.log = append(w.log, journal.ShardOp{Shard: s.Index, Op: op})
}

func (w *world) ref(x ident) model.RunRef {
	ref, ok := w.phys[x]
	if !ok {
		w.tb.Fatalf("no run %s", x)
	}
	return ref
}

func (w *world) run(x ident) *model.Run { ref := w.ref(x); return w.shards[ref.Shard].Runs[ref.Run] }

func (w *world) shard(x ident) *model.Shard { return w.shards[w.ref(x).Shard] }

// latest is the latest generation of id, or the zero ident.
func (w *world) latest(id string) ident {
	if g := w.gens[id]; g > 0 {
		return ident{id, g}
	}
	return ident{}
}

// skip leaves a hole in s's run numbering (physical only).
func (w *world) skip(s *model.Shard) {
	if w.gaps != nil {
		s.NextRun += model.RunNo(w.gaps.IntN(3))
	}
}

func (w *world) start(id, typ string, origin model.Origin, parent model.ParentRef, parentID string, input []byte, now int64) ident {
	s := w.shardOf(id)
	w.skip(s)
	return w.startAt(s, s.NextRun, id, typ, origin, parent, parentID, input, now)
}

func (w *world) startAt(s *model.Shard, no model.RunNo, id, typ string, origin model.Origin, parent model.ParentRef,
	parentID string, input []byte, now int64) ident {
	gen := w.gens[id] + 1
	rec := model.Record{Kind: model.KindStart, WorkflowID: id, Type: typ, Time: now, Origin: origin, Gen: gen,
		Parent: parent, ParentID: parentID, Payload: input, Attempt: 1}
	switch origin {
	case model.OriginContinued, model.OriginReset, model.OriginRestart:
		rec.Pred = w.ref(ident{id, gen - 1})
	}
	w.apply(s, model.Op{Kind: model.OpStart, Run: no, Rec: rec})
	x := ident{id, gen}
	w.gens[id] = gen
	w.phys[x] = model.RunRef{Shard: s.Index, Run: no}
	return x
}

// add appends rec to x's journal at the next position and returns it.
func (w *world) add(x ident, rec model.Record) uint32 {
	w.tb.Helper()
	r := w.run(x)
	rec.Pos = uint32(len(r.Journal))
	w.apply(w.shard(x), model.Op{Kind: model.OpAppend, Run: r.No, Rec: rec})
	return rec.Pos
}

func (w *world) step(x ident, name string, payload []byte) uint32 {
	r := w.run(x)
	pos := uint32(len(r.Journal))
	return w.add(x, model.Record{Kind: model.KindStep, Name: name, Status: model.StatusOK, Attempt: 1, Key: r.Key(pos), Payload: payload})
}

func (w *world) async(x ident, name string) uint32 {
	ref := w.ref(x)
	pos := uint32(len(w.run(x).Journal))
	return w.add(x, model.Record{Kind: model.KindAsync, Name: name, Token: model.Token{Gen: model.TokenGen(w.shards[ref.Shard].StoreGen), Shard: ref.Shard, Run: ref.Run, Pos: pos}})
}

func (w *world) child(x ident, childID, typ string, payload []byte) string {
	pos := uint32(len(w.run(x).Journal))
	msg := fmt.Sprintf("%s/%d/c%d", x.id, x.gen, pos)
	w.add(x, model.Record{Kind: model.KindChild, WorkflowID: childID, Type: typ, MsgID: msg, Payload: payload})
	return msg
}

func (w *world) send(x ident, target, name string, cancel bool, payload []byte) string {
	pos := uint32(len(w.run(x).Journal))
	msg := fmt.Sprintf("%s/%d/s%d", x.id, x.gen, pos)
	flags := uint32(model.SendSignal)
	if cancel {
		flags = model.SendCancel
	}
	w.add(x, model.Record{Kind: model.KindSend, WorkflowID: target, Name: name, MsgID: msg, Attempt: flags, Payload: payload})
	return msg
}

// update has x accept an update; caller is the zero ident for an update
// from outside the engine.
func (w *world) update(x ident, name, updateID string, caller ident, callerPos uint32, payload []byte) uint32 {
	rec := model.Record{Kind: model.KindUpdate, Name: name, MsgID: updateID, Payload: payload}
	if caller.id != "" {
		ref := w.ref(caller)
		rec.Parent = model.ParentRef{Shard: ref.Shard, Run: ref.Run, Pos: callerPos}
		rec.ParentID = caller.id
	}
	return w.add(x, rec)
}

func (w *world) finish(x ident, status model.Status, now int64, payload []byte) {
	w.add(x, model.Record{Kind: model.KindDone, Status: status, Time: now, Payload: payload})
}

// continueAs ends x with a continue-as-new or reset and starts its next
// generation, naming each other.
func (w *world) continueAs(x ident, status model.Status, now int64, input []byte) ident {
	s := w.shard(x)
	w.skip(s)
	next := s.NextRun
	w.add(x, model.Record{Kind: model.KindDone, Status: status, Time: now, Next: model.RunRef{Shard: s.Index, Run: next}})
	origin := model.OriginContinued
	if status == model.StatusReset {
		origin = model.OriginReset
	}
	return w.startAt(s, next, x.id, w.run(x).Type, origin, model.ParentRef{}, "", input, now)
}

func (w *world) op(x ident, kind model.OpKind) {
	w.apply(w.shard(x), model.Op{Kind: kind, Run: w.ref(x).Run})
}

// outboxIDs lists every unacknowledged message ID, sorted.
func (w *world) outboxIDs() []string {
	var ids []string
	for _, s := range w.shards {
		for id := range s.Outbox {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// deliver hands message id to its receiver, as the engine does: the
// receiver records it as seen and acts on it unless it had it already,
// then (if ack) the sender drops it.
func (w *world) deliver(id string, ack bool, now int64) {
	var from *model.Shard
	for _, s := range w.shards {
		if _, ok := s.Outbox[id]; ok {
			from = s
		}
	}
	if from == nil {
		w.tb.Fatalf("deliver %q: not in any outbox", id)
	}
	m := *from.Outbox[id]
	recv := w.shardOf(m.Target)
	if _, dup := recv.Seen[id]; !dup {
		w.apply(recv, model.Op{Kind: model.OpSeen, MsgID: id, WorkflowID: m.Target})
		w.receive(recv, &m, now)
	}
	if ack {
		w.apply(from, model.Op{Kind: model.OpAck, MsgID: id})
	}
}

func (w *world) live(x ident) bool {
	if x.id == "" {
		return false
	}
	st := w.run(x).State
	return st == model.StateRunning || st == model.StateParked
}

// wake loads x if it is parked.
func (w *world) wake(x ident) {
	if w.run(x).State == model.StateParked {
		w.op(x, model.OpLoad)
	}
}

func (w *world) receive(recv *model.Shard, m *model.Message, now int64) {
	switch m.Kind {
	case model.MsgStartChild:
		if w.live(w.latest(m.Target)) {
			return // the ID is busy: the start is refused
		}
		sender := w.shards[m.From.Shard].Runs[m.From.Run]
		x := w.start(m.Target, m.Type, model.OriginChild, m.Parent, sender.WorkflowID, m.Payload, now)
		if m.Deadline != 0 {
			w.tb.Fatalf("test worlds give children no deadline")
		}
		_ = x
	case model.MsgChildResult:
		p := recv.Runs[m.Parent.Run]
		px := ident{p.WorkflowID, p.Gen}
		if !w.live(px) {
			return
		}
		w.wake(px)
		w.add(px, model.Record{Kind: model.KindChildDone, Ref: m.Parent.Pos, Status: m.Status, Payload: m.Payload})
	case model.MsgSignal, model.MsgCancel:
		x := w.latest(m.Target)
		if !w.live(x) {
			return
		}
		w.wake(x)
		if m.Kind == model.MsgSignal {
			w.add(x, model.Record{Kind: model.KindSignal, Name: m.Name, MsgID: m.ID, By: m.From, Payload: m.Payload, Time: now})
		} else {
			w.add(x, model.Record{Kind: model.KindCancel, By: m.From, Payload: m.Payload, Time: now})
		}
	case model.MsgUpdateResult:
		// The caller position learns the result; it holds no record of it.
	}
}

// idents lists every run, sorted by identity.
func (w *world) idents() []ident {
	out := make([]ident, 0, len(w.phys))
	for x := range w.phys {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b ident) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return int(a.gen) - int(b.gen)
	})
	return out
}

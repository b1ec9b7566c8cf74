package sim

import (
	"errors"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
)

// ErrNoPendingAsync is returned for a completion token that names no
// pending async completion (never issued, already answered, its run has
// finished, or handed out before a reshard rebuilt its shard's store).
var ErrNoPendingAsync = errors.New("token names no pending async completion")

// handle performs one event inside t. It reports false when the event
// turned out to be no longer due (it changes nothing then).
func (e *Engine) handle(t *tx, ev *event) bool {
	if ev.kind == evMsg {
		return e.deliver(t, ev)
	}
	t.claim(ev.wf)
	if !e.valid(ev) {
		return false
	}
	switch ev.kind {
	case evFresh:
		rec := freshStart(e.fresh.seed, ev.fresh, e.fresh.finishedFrac, t.now)
		sh := e.shardOf(rec.WorkflowID)
		t.wake(t.start(sh, t.newRun(sh), rec))
		return true
	case evRestart:
		v := t.run(ev.wf, ev.gen, ev.shard, ev.run)
		p := v.params()
		p.rst--
		st := v.j[0]
		sh := v.shard
		nv := t.start(sh, t.newRun(sh), model.Record{WorkflowID: v.wf, Type: v.typ, Time: t.now,
			Attempt: st.Attempt, Gen: v.gen + 1, Origin: model.OriginRestart, Pred: v.ref(), Payload: p.encode()})
		t.wake(nv)
		return true
	case evTombstone:
		t.tombstone(t.ended(ev.wf, ev.gen, ev.shard, ev.run))
		return true
	}
	v := t.run(ev.wf, ev.gen, ev.shard, ev.run)
	switch ev.kind {
	case evTimer:
		if r := v.j[ev.pos]; r.Kind == model.KindWait {
			t.append(v, model.Record{Kind: model.KindWaited, Ref: ev.pos, Status: model.StatusTimedOut, Time: t.now})
		} else {
			t.append(v, model.Record{Kind: model.KindFired, Ref: ev.pos, Time: t.now})
		}
		t.wake(v)
	case evDeadline:
		t.append(v, model.Record{Kind: model.KindDone, Status: model.StatusTimedOut, Time: t.now,
			Payload: []byte("run deadline passed")})
	case evExtSignal:
		name := "approve"
		if ev.pos > 0 {
			name = v.j[ev.pos].Name
		}
		t.append(v, model.Record{Kind: model.KindSignal, Name: name, MsgID: extSignalID(v.wf, v.gen, ev.pos),
			Time: t.now, Payload: []byte("from outside")})
		t.wake(v)
	case evExtUpdate:
		t.append(v, model.Record{Kind: model.KindUpdate, Name: "query", MsgID: extUpdateID(v.wf, v.gen, ev.pos),
			Time: t.now, Payload: fmt.Appendf(nil, "query %d", ev.pos)})
		t.wake(v)
	case evAsync:
		tok := v.j[ev.pos].Token
		if err := e.complete(t, tok.String(), []byte("answered")); err != nil {
			panic(fmt.Sprintf("sim: answering %s#%d@%d by its own token %s: %v", v.wf, v.gen, ev.pos, tok, err))
		}
		// Now and then the outside world answers twice; the second answer
		// names no pending completion and is refused.
		if newHasher(v.params().seed).str(v.wf).u64(uint64(v.gen)).u64(uint64(ev.pos)).str("dup").sum()%5 == 0 {
			if err := e.complete(t, tok.String(), []byte("again")); err == nil {
				panic(fmt.Sprintf("sim: second answer to %s accepted", tok))
			}
		}
	case evCancel:
		t.append(v, model.Record{Kind: model.KindCancel, Time: t.now, Payload: []byte("operator")})
		t.wake(v)
	case evTerminate:
		t.append(v, model.Record{Kind: model.KindDone, Status: model.StatusTerminated, Time: t.now,
			Payload: []byte("terminated by operator")})
	case evReset:
		e.reset(t, v)
	}
	return true
}

// reset replaces an unfinished run by a new one of the same workflow ID
// that starts its code over.
func (e *Engine) reset(t *tx, v *runView) {
	no := t.newRun(v.shard)
	p := v.params()
	p.noReset = true
	st := v.j[0]
	t.append(v, model.Record{Kind: model.KindDone, Status: model.StatusReset, Time: t.now,
		Next: model.RunRef{Shard: v.shard, Run: no}, Payload: []byte("reset by operator")})
	nv := t.start(v.shard, no, model.Record{WorkflowID: v.wf, Type: v.typ, Time: t.now, Attempt: st.Attempt,
		Gen: v.gen + 1, Origin: model.OriginReset, Pred: v.ref(), Payload: p.encode()})
	t.wake(nv)
}

// complete answers an async completion by its token, the way an outside
// caller does: the token alone names the shard, the run and the position,
// and the whole token, store generation included, must be the one the
// Async record holds. A token handed out before a reshard carries the old
// store generation, so it is refused even when a run now has its shard,
// number and position.
func (e *Engine) complete(t *tx, token string, payload []byte) error {
	tok, err := model.ParseToken(token)
	if err != nil {
		t.stats.rejected++
		return err
	}
	ss := e.b.shards()
	if tok.Shard >= len(ss) {
		t.stats.rejected++
		return fmt.Errorf("%w: %s names shard %d of %d", ErrNoPendingAsync, token, tok.Shard, len(ss))
	}
	if want := model.TokenGen(ss[tok.Shard].StoreGen); tok.Gen != want {
		t.stats.rejected++
		return fmt.Errorf("%w: %s was handed out by store generation %d (mod 64); shard %d's store is at generation %d",
			ErrNoPendingAsync, token, tok.Gen, tok.Shard, ss[tok.Shard].StoreGen)
	}
	r := ss[tok.Shard].Run(tok.Run)
	if r == nil {
		t.stats.rejected++
		return fmt.Errorf("%w: %s names no run", ErrNoPendingAsync, token)
	}
	v := t.latest(r.WorkflowID)
	if v == nil || v.no != tok.Run || v.shard != tok.Shard || v.done() || int(tok.Pos) >= len(v.j) ||
		v.j[tok.Pos].Kind != model.KindAsync || v.j[tok.Pos].Token != tok || isClosed(v.j, tok.Pos) {
		t.stats.rejected++
		return fmt.Errorf("%w: %s", ErrNoPendingAsync, token)
	}
	t.append(v, model.Record{Kind: model.KindAsyncDone, Ref: tok.Pos, Status: model.StatusOK, Time: t.now, Payload: payload})
	t.wake(v)
	return nil
}

// Complete answers a pending async completion by its token, from outside,
// and commits. It returns ErrNoPendingAsync (wrapped) for a token that
// names nothing pending.
func (e *Engine) Complete(token string, payload []byte) error {
	t := e.newTx()
	var cerr error
	ev := event{at: e.now, kind: evAsync}
	_, ab, err := e.runTxFunc(t, func() bool {
		cerr = e.complete(t, token, payload)
		return cerr == nil
	})
	if err != nil {
		return err
	}
	if ab == abortConflict {
		if err := e.flush(); err != nil {
			return err
		}
		return e.Complete(token, payload)
	}
	if cerr != nil {
		e.stats.Rejected++
		return cerr
	}
	e.accept(t, &ev)
	return e.flush()
}

// deliver hands an outbox message to its receiver: the receiver records
// the message ID (OpSeen) with its effect, and the sender drops it (OpAck),
// in one batch. A receiver that has seen the ID already drops the repeat
// and only acknowledges it.
func (e *Engine) deliver(t *tx, ev *event) bool {
	ss := e.b.shards()
	m, ok := ss[ev.shard].Outbox[ev.msg]
	if !ok {
		return false
	}
	t.claim(m.Target)
	recv := e.shardOf(m.Target)
	if _, seen := ss[recv].SeenBy(m.ID); seen {
		t.ack(ev.shard, m.ID)
		t.stats.repeats++
		return true
	}
	t.seen(recv, m.ID, m.Target)
	// Some acknowledgements are lost on the way: the message stays in the
	// sender's outbox and is sent again next round, and the receiver drops
	// the repeat. Which ones is a function of the message ID alone.
	if lostAck(m.ID) {
		t.stats.lostAcks++
		t.redeliver = append(t.redeliver, event{at: t.now + redelivery(m.ID), wf: m.Target, kind: evMsg, msg: m.ID, shard: ev.shard})
	} else {
		t.ack(ev.shard, m.ID)
	}
	switch m.Kind {
	case model.MsgStartChild:
		e.startChild(t, m)
	case model.MsgChildResult, model.MsgUpdateResult:
		// The waiting run, if it is still the latest of its workflow ID
		// and has not finished: a live run is the latest (tx.live).
		v := t.live(m.Target, m.Parent.Shard, m.Parent.Run)
		if v == nil || int(m.Parent.Pos) >= len(v.j) {
			break // the waiting run is gone or moved on: drop
		}
		pos := m.Parent.Pos
		want, kind := model.KindChild, model.KindChildDone
		if m.Kind == model.MsgUpdateResult {
			want, kind = model.KindWait, model.KindWaited
		}
		if v.j[pos].Kind != want || isClosed(v.j, pos) {
			break
		}
		t.append(v, model.Record{Kind: kind, Ref: pos, Status: m.Status, MsgID: m.ID, Time: t.now, Payload: m.Payload})
		t.wake(v)
	case model.MsgSignal, model.MsgCancel:
		v := t.latest(m.Target)
		if v == nil || v.done() {
			break
		}
		if m.Kind == model.MsgSignal {
			t.append(v, model.Record{Kind: model.KindSignal, Name: m.Name, MsgID: m.ID, By: m.From, Time: t.now, Payload: m.Payload})
		} else {
			t.append(v, model.Record{Kind: model.KindCancel, By: m.From, Time: t.now, Payload: m.Payload})
		}
		t.wake(v)
	}
	return true
}

// startChild starts the run a start-child message asks for. The child's
// Start names its parent by reference (the position waiting) and by
// workflow ID (where results are routed), both taken from the message.
func (e *Engine) startChild(t *tx, m *model.Message) {
	prev := t.latest(m.Target)
	gen := uint32(1)
	if prev != nil {
		if !prev.done() {
			return // an ID conflict: the parent never hears back (its deadline or cancel ends it)
		}
		gen = prev.gen + 1
	}
	sh := e.shardOf(m.Target)
	rec := model.Record{WorkflowID: m.Target, Type: m.Type, Time: t.now, Deadline: m.Deadline, Attempt: 1,
		Gen: gen, Origin: model.OriginChild, Parent: m.Parent, ParentID: m.ParentID, Payload: m.Payload}
	t.wake(t.start(sh, t.newRun(sh), rec))
}

// deliverUpdate hands a run's update call to the target's latest run in the
// caller's tx (the Update record carries the caller's reference, waiting
// at pos). It reports false when no running run can take it.
func (e *Engine) deliverUpdate(t *tx, caller *runView, pos uint32, target, name, id string) bool {
	v := t.latest(target)
	if v == nil || v.done() || v == caller {
		return false
	}
	t.append(v, model.Record{Kind: model.KindUpdate, Name: name, MsgID: id, Time: t.now,
		Parent: model.ParentRef{Shard: caller.shard, Run: caller.no, Pos: pos}, ParentID: caller.wf,
		Payload: []byte(name + " from " + caller.wf)})
	t.wake(v)
	return true
}

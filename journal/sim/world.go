package sim

import (
	"fmt"
	"strings"

	"github.com/fusee-dev/fusee/journal/model"
)

// The scripted outside world: clients that start workflows (gen only),
// send signals and updates, answer async completions by token, and
// operators who cancel, terminate, reset and restart. What it does to a
// run, and when, is derived from the run's identity, its input (which
// carries the workload seed) and its journal, so that an engine reopening
// a directory derives exactly the events a running engine had pending.

// freshMix weighs the top-level workflow types of a workload.
var freshMix = []struct {
	typ    string
	weight int
}{
	{"order", 25}, {"batch", 10}, {"approval", 15}, {"service", 8},
	{"client", 15}, {"sleeper", 15}, {"poller", 12},
}

// runsPerFresh estimates how many runs one top-level workflow makes
// (children, continue-as-new, resets, restarts); gen spaces its arrivals
// with it.
const runsPerFresh = 2.2

func freshType(seed uint64, i int) string {
	x := pick(newHasher(seed).str("type").u64(uint64(i)).sum(), 100)
	for _, m := range freshMix {
		if x < m.weight {
			return m.typ
		}
		x -= m.weight
	}
	return freshMix[0].typ
}

func freshID(seed uint64, i int) string { return fmt.Sprintf("%s-%07d", freshType(seed, i), i) }

// nearestOfType is the closest top-level workflow of type typ started
// before workload index idx (within 64), or "".
func nearestOfType(seed uint64, idx int, typ string) string {
	for j := idx - 1; j >= 0 && j >= idx-64; j-- {
		if freshType(seed, j) == typ {
			return freshID(seed, j)
		}
	}
	return ""
}

// Calibration of GenOptions.FinishedFrac: with no short workflows at all
// about 43% of the runs are finished when gen stops (failures, cancels,
// clients, quick children), and each short share adds about 0.55 of it.
const (
	finishedFloor = 0.43
	finishedSlope = 0.55
)

// shortShare is the share of top-level workflows that must be short for
// about finishedFrac of the runs to be finished when gen stops.
func shortShare(finishedFrac float64) float64 {
	return min(1, max(0, (finishedFrac-finishedFloor)/finishedSlope))
}

// freshStart is the Start record of workload entry i, started at now.
// Short workflows finish within minutes; long ones wait for hours.
func freshStart(seed uint64, i int, finishedFrac float64, now int64) model.Record {
	typ := freshType(seed, i)
	wf := freshID(seed, i)
	h := func(label string) uint64 { return newHasher(seed).str(wf).str(label).sum() }
	p := params{seed: seed, idx: i}
	p.long = float64(h("long")%10000) >= shortShare(finishedFrac)*10000
	switch typ {
	case "batch", "poller":
		p.can = pick(h("chain"), 3)
	}
	switch typ {
	case "order", "poller":
		if h("restart")%6 == 0 {
			p.rst = 1
		}
	}
	rec := model.Record{Kind: model.KindStart, WorkflowID: wf, Type: typ, Time: now,
		Attempt: 1 + uint32(h("version")%2), Gen: 1, Origin: model.OriginFresh, Payload: p.encode()}
	if typ == "sleeper" && h("deadline")%3 == 0 {
		rec.Deadline = now + sleeperNap(p, wf, 1)/2
	}
	return rec
}

// External message IDs: the dedup values of signals and updates from
// outside, built from the logical event that sends them.
func extSignalID(wf string, gen uint32, pos uint32) string {
	if pos == 0 {
		return fmt.Sprintf("ext:%s/%d/early", wf, gen)
	}
	return fmt.Sprintf("ext:%s/%d/%d", wf, gen, pos)
}

func extUpdateID(wf string, gen uint32, k uint32) string {
	return fmt.Sprintf("ext:%s/%d/upd%d", wf, gen, k)
}

// operator actions on top-level runs.
const (
	opNone = iota
	opCancel
	opTerminate
	opReset
)

func operatorAction(p params, v *runView) (int, int64) {
	st := &v.j[0]
	if st.Origin == model.OriginChild {
		return opNone, 0
	}
	h := newHasher(p.seed).str(v.wf).u64(uint64(v.gen)).str("operator").sum()
	x := pick(h, 100)
	var lo, hi int64 = 5 * second, 90 * second
	if p.long {
		lo, hi = 10*minute, 3*hour
	}
	at := st.Time + between(h>>20, lo, hi)
	switch v.typ {
	case "sleeper":
		switch {
		case x < 12:
			return opCancel, at
		case x < 22:
			return opTerminate, at
		case x < 34 && !p.noReset:
			return opReset, at
		}
	case "order", "service", "poller":
		switch {
		case x < 3:
			return opCancel, at
		case x < 5:
			return opTerminate, at
		case x < 8 && !p.noReset:
			return opReset, at
		}
	}
	return opNone, 0
}

// sentMessage returns the outbox message the record at pos sent, if any:
// its ID (built the way Apply builds it), its target and kind.
func sentMessage(j []model.Record, pos int) (id, target string, kind model.MsgKind, ok bool) {
	r := &j[pos]
	switch r.Kind {
	case model.KindChild:
		return r.MsgID, r.WorkflowID, model.MsgStartChild, true
	case model.KindSend:
		if r.Attempt == model.SendCancel {
			return r.MsgID, r.WorkflowID, model.MsgCancel, true
		}
		return r.MsgID, r.WorkflowID, model.MsgSignal, true
	case model.KindDone:
		if st := &j[0]; !st.Parent.IsZero() {
			return fmt.Sprintf("%s/%d/r", st.WorkflowID, st.Gen), st.ParentID, model.MsgChildResult, true
		}
	case model.KindUpdateDone:
		if int(r.Ref) < len(j) {
			if u := &j[r.Ref]; !u.Parent.IsZero() {
				st := &j[0]
				return fmt.Sprintf("%s/%d/u%d", st.WorkflowID, st.Gen, r.Ref), u.ParentID, model.MsgUpdateResult, true
			}
		}
	}
	return "", "", 0, false
}

// latency is how long a message takes to reach its receiver: most arrive
// at the next round, some take seconds, a few (more often signals,
// cancels and update results, which take a slower path) half an hour. It
// depends on the message ID alone.
func latency(id string, kind model.MsgKind) int64 {
	h := newHasher(0x1a7e).str(id).sum()
	slow := 8
	if kind == model.MsgSignal || kind == model.MsgCancel || kind == model.MsgUpdateResult {
		slow = 40
	}
	switch x := pick(h, 100); {
	case x < slow:
		return between(h>>16, 2*minute, 40*minute)
	case x < slow+12:
		return between(h>>16, 1*second, 10*second)
	}
	return 0
}

// redelivery is when a message whose acknowledgement was lost is sent
// again.
func redelivery(id string) int64 {
	return between(newHasher(0x2e5d).str(id).sum(), 1*second, 10*minute)
}

// lostAck says whether the first acknowledgement of a message is lost.
func lostAck(id string) bool { return newHasher(0x5eed).str(id).sum()%8 == 0 }

// msgEvent is the delivery of message id sent by a run of shard at sent.
func msgEvent(id, target string, kind model.MsgKind, shard int, sent int64) event {
	return event{at: sent + latency(id, kind), wf: target, kind: evMsg, msg: id, shard: shard}
}

// derive lists the events v's journal implies, from position from on
// (from 0: also the run-level ones its Start implies). push receives
// them; a run a tx just changed calls it for its new records, and Open
// calls it for every run (without messages, which it takes from the
// outboxes).
func (e *Engine) derive(v *runView, from int, msgs bool, push func(event)) {
	if len(v.j) == 0 {
		return
	}
	p := v.params()
	mk := func(kind evKind, at int64, pos uint32) event {
		return event{at: at, wf: v.wf, gen: v.gen, pos: pos, kind: kind, shard: v.shard, run: v.no}
	}
	h := func(label string, pos uint32) uint64 {
		return newHasher(p.seed).str(v.wf).u64(uint64(v.gen)).u64(uint64(pos)).str(label).sum()
	}
	if from == 0 {
		st := &v.j[0]
		if st.Deadline > 0 {
			push(mk(evDeadline, st.Deadline, 0))
		}
		switch op, at := operatorAction(p, v); op {
		case opCancel:
			push(mk(evCancel, at, 0))
		case opTerminate:
			push(mk(evTerminate, at, 0))
		case opReset:
			push(mk(evReset, at, 0))
		}
		switch v.typ {
		case "service":
			n := pick(h("updates", 0), 4)
			var lo, hi int64 = 5 * second, 60 * second
			if p.long {
				lo, hi = 5*minute, 1*hour
			}
			at := st.Time
			for k := 1; k <= n; k++ {
				at += between(h("update-at", uint32(k)), lo, hi)
				push(mk(evExtUpdate, at, uint32(k)))
			}
		case "approval":
			if h("early", 0)%4 == 0 {
				push(mk(evExtSignal, st.Time+between(h("early-at", 0), 1*second, 5*second), 0))
			}
		}
		from = 1
	}
	for pos := from; pos < len(v.j); pos++ {
		r := &v.j[pos]
		upos := uint32(pos)
		if msgs {
			if id, target, kind, ok := sentMessage(v.j, pos); ok {
				push(msgEvent(id, target, kind, v.shard, r.Time))
			}
		}
		switch r.Kind {
		case model.KindTimer, model.KindAttempt:
			if r.Time != 0 {
				push(mk(evTimer, r.Time, upos))
			}
		case model.KindWait:
			if r.Deadline != 0 {
				push(mk(evTimer, r.Deadline, upos))
			}
			if strings.HasPrefix(r.Name, updateWaitPrefix) {
				break
			}
			// The outside world answers waits: approvals within 1.5
			// timeouts (a third come too late), services are stopped by
			// an operator now and then.
			span := r.Deadline - r.Time
			switch {
			case r.Name == "approve":
				push(mk(evExtSignal, r.Time+1+between(h("answer", upos), 0, span*3/2), upos))
			case h("answer", upos)%3 == 0:
				push(mk(evExtSignal, r.Time+1+between(h("answer-at", upos), 0, span), upos))
			}
		case model.KindAsync:
			var lo, hi int64 = 1 * second, 30 * second
			if p.long {
				lo, hi = 1*hour, 5*hour
			}
			push(mk(evAsync, r.Time+between(h("answer", upos), lo, hi), upos))
		case model.KindDone:
			push(mk(evTombstone, r.Time+e.cfg.Retention, upos))
			if p.rst > 0 && v.j[0].Origin != model.OriginChild &&
				(r.Status == model.StatusOK || r.Status == model.StatusFailed) {
				push(mk(evRestart, r.Time+between(h("restart", upos), 1*minute, 10*minute), upos))
			}
		}
	}
}

// valid reports whether ev is still due against committed state: the
// events Open derives for a directory are exactly the valid ones, so a
// reopened engine and one that never stopped agree on what is pending.
func (e *Engine) valid(ev *event) bool {
	ss := e.b.shards()
	switch ev.kind {
	case evFresh:
		_, exists := ss[e.shardOf(ev.wf)].LatestNo(ev.wf)
		return !exists
	case evMsg:
		_, ok := ss[ev.shard].Outbox[ev.msg]
		return ok
	}
	if ev.shard < 0 || ev.shard >= len(ss) {
		return false
	}
	if ev.kind == evTombstone {
		// The run's entry is enough: an evicted finished run is not read
		// back whole to be archived (model.Shard.Head). Nor is its entry
		// read when the shard knows it finished and has no tombstone yet
		// (model.Shard.FinishedEvicted): the event names the run it was
		// derived from.
		if ss[ev.shard].FinishedEvicted(ev.run) {
			return true
		}
		h, ok := ss[ev.shard].Head(ev.run)
		return ok && h.WorkflowID == ev.wf && h.Gen == ev.gen && h.State == model.StateFinished
	}
	if ev.kind != evRestart && ss[ev.shard].Ended(ev.run) {
		// Every other kind acts on a run that has not finished: one that
		// is known to have finished is not read back (Shard.Ended).
		return false
	}
	r := ss[ev.shard].Run(ev.run)
	if r == nil || r.WorkflowID != ev.wf || r.Gen != ev.gen {
		return false
	}
	live := r.State == model.StateRunning || r.State == model.StateParked
	switch ev.kind {
	case evTimer:
		return live && timerOpen(r.Journal, ev.pos)
	case evDeadline, evCancel, evTerminate, evReset:
		return live
	case evExtSignal:
		return live && !hasRecord(r.Journal, model.KindSignal, extSignalID(ev.wf, ev.gen, ev.pos))
	case evExtUpdate:
		return live && !hasRecord(r.Journal, model.KindUpdate, extUpdateID(ev.wf, ev.gen, ev.pos))
	case evAsync:
		return live && int(ev.pos) < len(r.Journal) && r.Journal[ev.pos].Kind == model.KindAsync &&
			!isClosed(r.Journal, ev.pos)
	case evRestart:
		latest, _ := ss[ev.shard].LatestNo(ev.wf)
		return (r.State == model.StateFinished || r.State == model.StateTombstone) && latest == r.No
	}
	return false
}

func timerOpen(j []model.Record, pos uint32) bool {
	if int(pos) >= len(j) {
		return false
	}
	r := &j[pos]
	switch {
	case (r.Kind == model.KindTimer || r.Kind == model.KindAttempt) && r.Time != 0:
	case r.Kind == model.KindWait && r.Deadline != 0:
	default:
		return false
	}
	return !isClosed(j, pos)
}

func isClosed(j []model.Record, pos uint32) bool {
	for i := int(pos) + 1; i < len(j); i++ {
		if completes(j[i].Kind) && j[i].Ref == pos {
			return true
		}
	}
	return false
}

func hasRecord(j []model.Record, kind model.Kind, msgID string) bool {
	for i := range j {
		if j[i].Kind == kind && j[i].MsgID == msgID {
			return true
		}
	}
	return false
}

package sim

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/fusee-dev/fusee/journal/model"
)

// Workflow code runs the way a durable engine's SDK runs it: from the top,
// every time, against the run's journal. Each command (step, timer, wait,
// child, …) first looks for its record in the journal (replay) and only
// past the journal's end does it append a new one. Code that must wait
// for something the journal does not hold yet unwinds (a panic caught by
// runCode) and runs again, from the top, when the engine appends what it
// waited for. So a run's progress is a pure function of its journal and
// its input: nothing about a run lives outside the directory.

// unwind ends a code run early.
type unwind int

const (
	unwindBlocked unwind = iota + 1 // waits for a completion
	unwindDone                      // appended its Done record
)

// handlerPrefix names the timers update handlers set; they are not part of
// the main line of commands.
const handlerPrefix = "handle "

// updateWaitPrefix names the waits of runs that called an update.
const updateWaitPrefix = "update:"

// ctx is one run of a workflow's code.
type ctx struct {
	t    *tx
	v    *runView
	p    params
	now  int64
	cmds []uint32 // positions of main-line commands, in order
	i    int      // replay cursor into cmds
	// compl[pos] is the position of the record that completed pos, or -1.
	compl []int32
}

// runCode runs v's code once, from the top, until it blocks or finishes.
func runCode(t *tx, v *runView) {
	c := &ctx{t: t, v: v, p: v.params(), now: t.now}
	c.index()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(unwind); !ok {
				panic(r)
			}
		}
	}()
	if c.cancelRequested() {
		c.handleUpdates(true)
		c.Finish(model.StatusCancelled, []byte("cancelled"))
	}
	c.handleUpdates(false)
	script(v.typ)(c)
	// Every script ends in Finish or ContinueAsNew; falling off the end is
	// a bug in the script.
	panic(fmt.Sprintf("sim: workflow %s (%s) returned without finishing", v.wf, v.typ))
}

func isCommand(r *model.Record) bool {
	switch r.Kind {
	case model.KindStep, model.KindAttempt, model.KindWait, model.KindValue,
		model.KindChild, model.KindSend, model.KindSearchAttr, model.KindAsync, model.KindDone:
		return true
	case model.KindTimer:
		return !strings.HasPrefix(r.Name, handlerPrefix)
	}
	return false
}

func completes(k model.Kind) bool {
	switch k {
	case model.KindFired, model.KindWaited, model.KindChildDone, model.KindUpdateDone, model.KindAsyncDone:
		return true
	}
	return false
}

func (c *ctx) index() {
	j := c.v.j
	c.compl = make([]int32, len(j), len(j)+8)
	for i := range c.compl {
		c.compl[i] = -1
	}
	for i := 1; i < len(j); i++ {
		r := &j[i]
		if isCommand(r) {
			c.cmds = append(c.cmds, uint32(i))
		}
		if completes(r.Kind) && int(r.Ref) < len(j) && c.compl[r.Ref] < 0 {
			c.compl[r.Ref] = int32(i)
		}
	}
}

// add appends a record the code produced.
func (c *ctx) add(rec model.Record) uint32 {
	if rec.Time == 0 {
		rec.Time = c.now
	}
	pos := c.t.append(c.v, rec)
	c.compl = append(c.compl, -1)
	if completes(rec.Kind) && c.compl[rec.Ref] < 0 {
		c.compl[rec.Ref] = int32(pos)
	}
	if isCommand(&rec) {
		c.cmds = append(c.cmds, pos)
		c.i = len(c.cmds)
	}
	if rec.Kind == model.KindDone {
		panic(unwindDone)
	}
	return pos
}

// replay returns the position of the next recorded command, checking that
// the code asks for the same command it asked for before; ok is false
// past the journal's end.
func (c *ctx) replay(kind model.Kind, name string) (uint32, bool) {
	if c.i >= len(c.cmds) {
		return 0, false
	}
	pos := c.cmds[c.i]
	c.i++
	if r := &c.v.j[pos]; r.Kind != kind || r.Name != name {
		panic(fmt.Sprintf("sim: nondeterministic workflow %s#%d (%s): command %d is %s %q in the journal, code asks for %s %q",
			c.v.wf, c.v.gen, c.v.typ, pos, r.Kind, r.Name, kind, name))
	}
	return pos, true
}

// await returns the record that completed pos, or unwinds until it exists.
func (c *ctx) await(pos uint32) *model.Record {
	if at := c.compl[pos]; at >= 0 {
		return &c.v.j[at]
	}
	panic(unwindBlocked)
}

// h hashes the script's seed with the run's identity and a label: the
// source of every choice a script makes.
func (c *ctx) h(label string) uint64 {
	return newHasher(c.p.seed).str(c.v.wf).u64(uint64(c.v.gen)).str(label).sum()
}

// msgID names a message this run sends from position pos. It holds no run
// number, so receivers recognise a repeat after a reshard renumbered the
// sender.
func msgID(wf string, gen uint32, pos uint32) string {
	return fmt.Sprintf("%s/%d/%d", wf, gen, pos)
}

func backoff(attempt int) int64 { return 1000 << (attempt - 1) }

// Step runs a step that fails its first `fails` attempts (each retried
// after a backoff timer) and then ends with final; withKey records the
// Ctx::key the step ran with.
func (c *ctx) Step(name string, fails int, final model.Status, withKey bool) model.Status {
	for a := 1; a <= fails; a++ {
		pos, ok := c.replay(model.KindAttempt, name)
		if !ok {
			pos = c.add(model.Record{Kind: model.KindAttempt, Name: name, Attempt: uint32(a),
				Status: model.StatusFailed, Time: c.now + backoff(a), Payload: []byte("transient")})
		}
		c.await(pos)
	}
	pos, ok := c.replay(model.KindStep, name)
	if !ok {
		rec := model.Record{Kind: model.KindStep, Name: name, Attempt: uint32(fails + 1), Status: final}
		rec.Payload = c.stepResult(name, uint32(len(c.v.j)))
		if withKey {
			rec.Key = model.CtxKey{WorkflowID: c.v.wf, Run: c.v.no, Pos: uint32(len(c.v.j))}
		}
		pos = c.add(rec)
	}
	return c.v.j[pos].Status
}

func (c *ctx) stepResult(name string, pos uint32) []byte {
	h := newHasher(c.p.seed).str(c.v.wf).u64(uint64(c.v.gen)).u64(uint64(pos)).str(name).sum()
	return fmt.Appendf(nil, "%s:%08x", name, uint32(h))
}

// Sleep sets a durable timer and waits for it.
func (c *ctx) Sleep(name string, d int64) {
	pos, ok := c.replay(model.KindTimer, name)
	if !ok {
		pos = c.add(model.Record{Kind: model.KindTimer, Name: name, Time: c.now + d})
	}
	c.await(pos)
}

// Now records the current time.
func (c *ctx) Now() int64 {
	pos, ok := c.replay(model.KindValue, "time")
	if !ok {
		pos = c.add(model.Record{Kind: model.KindValue, Name: "time", Payload: binary.BigEndian.AppendUint64(nil, uint64(c.now))})
	}
	return int64(binary.BigEndian.Uint64(c.v.j[pos].Payload))
}

// Random records a random value: a hash of (seed, workflow ID, generation,
// position), never a draw from a shared stream.
func (c *ctx) Random() uint64 {
	pos, ok := c.replay(model.KindValue, "random")
	if !ok {
		p := uint32(len(c.v.j))
		x := newHasher(c.p.seed).str(c.v.wf).u64(uint64(c.v.gen)).u64(uint64(p)).str("random").sum()
		pos = c.add(model.Record{Kind: model.KindValue, Name: "random", Payload: binary.BigEndian.AppendUint64(nil, x)})
	}
	return binary.BigEndian.Uint64(c.v.j[pos].Payload)
}

// SearchAttr upserts a search attribute.
func (c *ctx) SearchAttr(name, value string) {
	if _, ok := c.replay(model.KindSearchAttr, name); !ok {
		c.add(model.Record{Kind: model.KindSearchAttr, Name: name, Payload: []byte(value)})
	}
}

// WaitSignal waits up to timeout for a signal called name and reports
// whether one came (false: timed out).
func (c *ctx) WaitSignal(name string, timeout int64) bool {
	pos, ok := c.replay(model.KindWait, name)
	if !ok {
		pos = c.add(model.Record{Kind: model.KindWait, Name: name, Deadline: c.now + timeout})
	}
	if at := c.compl[pos]; at >= 0 {
		return c.v.j[at].Status == model.StatusOK
	}
	if sig := c.bufferedSignal(name); sig >= 0 {
		c.add(model.Record{Kind: model.KindWaited, Ref: pos, MsgID: c.v.j[sig].MsgID, Status: model.StatusOK})
		return true
	}
	panic(unwindBlocked)
}

// bufferedSignal is the position of the oldest signal called name that no
// wait consumed, or -1.
func (c *ctx) bufferedSignal(name string) int {
	j := c.v.j
	for i := range j {
		r := &j[i]
		if r.Kind != model.KindSignal || r.Name != name {
			continue
		}
		consumed := false
		for k := range j {
			if j[k].Kind == model.KindWaited && j[k].MsgID == r.MsgID {
				consumed = true
				break
			}
		}
		if !consumed {
			return i
		}
	}
	return -1
}

// Child requests a child run (a start-child message) and returns the
// position to await.
func (c *ctx) Child(typ, id string, in params, deadline int64) uint32 {
	pos, ok := c.replay(model.KindChild, "")
	if !ok {
		p := uint32(len(c.v.j))
		rec := model.Record{Kind: model.KindChild, WorkflowID: id, Type: typ, MsgID: msgID(c.v.wf, c.v.gen, p), Payload: in.encode()}
		if deadline > 0 {
			rec.Deadline = c.now + deadline
		}
		pos = c.add(rec)
	}
	return pos
}

// AwaitChild waits for the child requested at pos and returns its status.
func (c *ctx) AwaitChild(pos uint32) model.Status { return c.await(pos).Status }

// Signal sends a signal to another workflow's latest run.
func (c *ctx) Signal(target, name string) {
	c.send(target, name, model.SendSignal, []byte("from "+c.v.wf))
}

// CancelOther asks another workflow's latest run to cancel.
func (c *ctx) CancelOther(target, reason string) {
	c.send(target, "cancel", model.SendCancel, []byte(reason))
}

func (c *ctx) send(target, name string, flag uint32, payload []byte) {
	if _, ok := c.replay(model.KindSend, name); !ok {
		p := uint32(len(c.v.j))
		c.add(model.Record{Kind: model.KindSend, WorkflowID: target, Name: name, Attempt: flag,
			MsgID: msgID(c.v.wf, c.v.gen, p), Payload: payload})
	}
}

// Async registers an async completion; the outside world answers it by its
// token, which carries the store generation of the run's shard: a reshard
// rebuilds the store with a new generation, so tokens handed out before it
// no longer match.
func (c *ctx) Async(name string) uint32 {
	pos, ok := c.replay(model.KindAsync, name)
	if !ok {
		p := uint32(len(c.v.j))
		gen := model.TokenGen(c.t.e.b.shards()[c.v.shard].StoreGen)
		pos = c.add(model.Record{Kind: model.KindAsync, Name: name,
			Token: model.Token{Gen: gen, Shard: c.v.shard, Run: c.v.no, Pos: p}})
	}
	return pos
}

// AwaitAsync waits for the answer to the async completion at pos.
func (c *ctx) AwaitAsync(pos uint32) model.Status { return c.await(pos).Status }

// CallUpdate sends an update to another workflow's latest run and waits up
// to timeout for its result. The update is handed over in the same batch
// (the caller's Wait and the target's Update commit together); a target
// that cannot take it fails the call at once.
func (c *ctx) CallUpdate(target, name string, timeout int64) model.Status {
	wname := updateWaitPrefix + name
	pos, ok := c.replay(model.KindWait, wname)
	if !ok {
		p := uint32(len(c.v.j))
		id := fmt.Sprintf("%s/%d/upd%d", c.v.wf, c.v.gen, p)
		pos = c.add(model.Record{Kind: model.KindWait, Name: wname, MsgID: id, Deadline: c.now + timeout})
		if !c.t.e.deliverUpdate(c.t, c.v, pos, target, name, id) {
			c.add(model.Record{Kind: model.KindWaited, Ref: pos, Status: model.StatusFailed, Payload: []byte("no such workflow")})
		}
	}
	r := c.await(pos)
	return r.Status
}

// Finish ends the run.
func (c *ctx) Finish(status model.Status, payload []byte) {
	c.handleUpdates(true)
	c.add(model.Record{Kind: model.KindDone, Status: status, Payload: payload})
}

// ContinueAsNew ends the run and starts the next one of its workflow ID,
// in the same shard, with input in.
func (c *ctx) ContinueAsNew(in params) {
	c.handleUpdates(true)
	no := c.t.newRun(c.v.shard)
	old := c.v
	st := old.j[0]
	nv := c.t.start(old.shard, no, model.Record{WorkflowID: old.wf, Type: old.typ, Time: c.now,
		Attempt: st.Attempt, Origin: model.OriginContinued, Gen: old.gen + 1,
		Pred: old.ref(), Payload: in.encode()})
	c.t.wake(nv)
	c.add(model.Record{Kind: model.KindDone, Status: model.StatusContinuedAsNew,
		Next: model.RunRef{Shard: old.shard, Run: no}, Payload: []byte("continued")})
}

func (c *ctx) cancelRequested() bool {
	for i := range c.v.j {
		if c.v.j[i].Kind == model.KindCancel {
			return true
		}
	}
	return false
}

// handleUpdates answers accepted updates: a handler takes a moment (a
// timer named after the update) unless the run is finishing, when every
// open update is answered at once so that no caller waits in vain.
func (c *ctx) handleUpdates(finishing bool) {
	j := c.v.j
	for i := 1; i < len(j); i++ {
		if j[i].Kind != model.KindUpdate || c.compl[i] >= 0 {
			continue
		}
		u := c.v.j[i]
		status := model.StatusOK
		if newHasher(c.p.seed).str(c.v.wf).str(u.MsgID).str("reject").sum()%10 == 0 {
			status = model.StatusFailed
		}
		if finishing {
			c.add(model.Record{Kind: model.KindUpdateDone, Ref: uint32(i), Attempt: c.updateOrdinal(uint32(i)),
				Status: model.StatusCancelled, Payload: []byte("workflow finished")})
			j = c.v.j
			continue
		}
		dh := newHasher(c.p.seed).str(c.v.wf).str(u.MsgID).str("delay").sum()
		delay := int64(dh % 6000)
		if c.p.long && dh>>32%4 == 0 {
			delay = between(dh>>16, 1*minute, 30*minute) // a slow handler: the caller may give up first
		}
		if delay < 1000 {
			c.add(model.Record{Kind: model.KindUpdateDone, Ref: uint32(i), Attempt: c.updateOrdinal(uint32(i)),
				Status: status, Payload: []byte("ok " + u.Name)})
			j = c.v.j
			continue
		}
		tname := handlerPrefix + u.MsgID
		tpos := -1
		for k := i + 1; k < len(j); k++ {
			if j[k].Kind == model.KindTimer && j[k].Name == tname {
				tpos = k
				break
			}
		}
		switch {
		case tpos < 0:
			c.add(model.Record{Kind: model.KindTimer, Name: tname, Time: c.now + delay})
		case c.compl[tpos] >= 0:
			c.add(model.Record{Kind: model.KindUpdateDone, Ref: uint32(i), Attempt: c.updateOrdinal(uint32(i)),
				Status: status, Payload: []byte("ok " + u.Name)})
		}
		j = c.v.j
	}
}

// updateOrdinal is the 1-based number of the update at pos among the run's
// updates.
func (c *ctx) updateOrdinal(pos uint32) uint32 {
	n := uint32(0)
	for i := uint32(0); i <= pos; i++ {
		if c.v.j[i].Kind == model.KindUpdate {
			n++
		}
	}
	return n
}

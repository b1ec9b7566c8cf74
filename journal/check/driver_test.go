package check

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
)

// driver runs one random logical workload on several worlds at once.
// Every decision is taken from the first world's logical state (which all
// worlds share) and applied to every world, so their logical content stays
// the same while their shard counts and run numbers differ.
type driver struct {
	rng    *rand.Rand
	ws     []*world
	now    int64
	nextID int
}

func newDriver(seed uint64, ws ...*world) *driver {
	return &driver{rng: rand.New(rand.NewPCG(seed, 1)), ws: ws, now: 1000}
}

func (d *driver) all(f func(w *world)) {
	for _, w := range d.ws {
		f(w)
	}
}

// Workflow IDs include characters that a naive renderer could trip on.
var idStems = []string{"order", "pay/ment", "ship#1", "a@b", "user-7", "ü-wf", "x"}

func (d *driver) freshID() string {
	d.nextID++
	return fmt.Sprintf("%s-%d", idStems[d.rng.IntN(len(idStems))], d.nextID)
}

func (d *driver) payload() []byte {
	switch d.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{0xff, 0x00, byte(d.rng.IntN(256))} // not UTF-8
	}
	return fmt.Appendf(nil, `{"v":%d}`, d.rng.IntN(1000))
}

func (d *driver) pick(xs []ident) ident { return xs[d.rng.IntN(len(xs))] }

// runs lists the first world's runs whose state satisfies keep.
func (d *driver) runs(keep func(x ident, r *model.Run) bool) []ident {
	w := d.ws[0]
	var out []ident
	for _, x := range w.idents() {
		if keep(x, w.run(x)) {
			out = append(out, x)
		}
	}
	return out
}

func (d *driver) live() []ident {
	return d.runs(func(x ident, r *model.Run) bool {
		return r.State == model.StateRunning || r.State == model.StateParked
	})
}

// steps performs n random steps.
func (d *driver) steps(n int) {
	for range n {
		d.now += int64(d.rng.IntN(50))
		d.step()
	}
}

func (d *driver) step() {
	live := d.live()
	switch k := d.rng.IntN(20); {
	case len(live) == 0 || k < 2 && len(live) < 12:
		id, typ, in := d.freshID(), fmt.Sprintf("T%d", d.rng.IntN(3)), d.payload()
		d.all(func(w *world) { w.start(id, typ, model.OriginFresh, model.ParentRef{}, "", in, d.now) })
	case k < 15:
		d.act(d.pick(live))
	case k < 17:
		if ids := d.ws[0].outboxIDs(); len(ids) > 0 {
			id, ack := ids[d.rng.IntN(len(ids))], d.rng.IntN(5) > 0
			d.all(func(w *world) { w.deliver(id, ack, d.now) })
		}
	case k < 18:
		done := d.runs(func(x ident, r *model.Run) bool { return r.State == model.StateFinished })
		if len(done) > 0 {
			x := d.pick(done)
			d.all(func(w *world) { w.op(x, model.OpTombstone) })
		}
	default:
		// Restart a workflow ID whose latest run is finished.
		ended := d.runs(func(x ident, r *model.Run) bool {
			return d.ws[0].gens[x.id] == x.gen && (r.State == model.StateFinished || r.State == model.StateTombstone)
		})
		if len(ended) > 0 {
			x := d.pick(ended)
			typ := d.ws[0].run(x).Type
			d.all(func(w *world) { w.start(x.id, typ, model.OriginRestart, model.ParentRef{}, "", nil, d.now) })
		}
	}
}

// act appends one random record (or parks) to a live run.
func (d *driver) act(x ident) {
	w0 := d.ws[0]
	if w0.run(x).State == model.StateParked {
		d.all(func(w *world) { w.op(x, model.OpLoad) })
		return
	}
	r := w0.run(x)
	p := model.PendingOf(r)
	now, pl := d.now, d.payload()
	add := func(rec model.Record) { d.all(func(w *world) { w.add(x, rec) }) }
	switch k := d.rng.IntN(19); k {
	case 0:
		name := fmt.Sprintf("s%d", d.rng.IntN(4))
		d.all(func(w *world) { w.step(x, name, pl) })
	case 1:
		add(model.Record{Kind: model.KindValue, Name: "rand", Time: now, Payload: pl})
	case 2:
		add(model.Record{Kind: model.KindSearchAttr, Name: "attr", Payload: pl})
	case 3:
		add(model.Record{Kind: model.KindTimer, Name: "t", Time: now + int64(d.rng.IntN(5000))})
	case 4:
		add(model.Record{Kind: model.KindAttempt, Name: "s0", Attempt: uint32(1 + d.rng.IntN(3)), Time: now + 100})
	case 5:
		if len(p.Timers) > 0 {
			add(model.Record{Kind: model.KindFired, Ref: p.Timers[d.rng.IntN(len(p.Timers))], Time: now})
		}
	case 6:
		var dl int64
		if d.rng.IntN(2) == 0 {
			dl = now + 2000
		}
		add(model.Record{Kind: model.KindWait, Name: fmt.Sprintf("sig%d", d.rng.IntN(2)), Deadline: dl})
	case 7:
		if len(p.Waits) > 0 {
			pos := p.Waits[d.rng.IntN(len(p.Waits))]
			rec := model.Record{Kind: model.KindWaited, Ref: pos, Status: model.StatusTimedOut, Time: now}
			for _, sp := range p.Signals {
				if r.Journal[sp].Name == r.Journal[pos].Name {
					rec.Status, rec.MsgID = model.StatusOK, r.Journal[sp].MsgID
					break
				}
			}
			add(rec)
		}
	case 8:
		childID := d.freshID()
		if ended := d.runs(func(y ident, ry *model.Run) bool {
			return w0.gens[y.id] == y.gen && ry.State == model.StateFinished
		}); len(ended) > 0 && d.rng.IntN(2) == 0 {
			childID = d.pick(ended).id // reuse an ID whose latest run ended
		}
		d.all(func(w *world) { w.child(x, childID, "Child", pl) })
	case 9, 10:
		targets := d.runs(func(y ident, _ *model.Run) bool { return w0.gens[y.id] == y.gen })
		target, cancel := d.pick(targets).id, k == 10 && d.rng.IntN(3) == 0
		name := fmt.Sprintf("sig%d", d.rng.IntN(2))
		d.all(func(w *world) { w.send(x, target, name, cancel, pl) })
	case 11:
		var caller ident
		var cpos uint32
		if others := d.live(); d.rng.IntN(3) > 0 {
			caller = d.pick(others)
			cpos = uint32(len(w0.run(caller).Journal) - 1)
		}
		uid := fmt.Sprintf("u-%d", d.rng.IntN(1000))
		d.all(func(w *world) { w.update(x, "upd", uid, caller, cpos, pl) })
	case 12:
		if len(p.Updates) > 0 {
			pos := p.Updates[d.rng.IntN(len(p.Updates))]
			add(model.Record{Kind: model.KindUpdateDone, Ref: pos, Attempt: uint32(len(r.Journal)), Status: model.StatusOK, Payload: pl})
		}
	case 13:
		d.all(func(w *world) { w.async(x, "ext") })
	case 14:
		if len(p.Asyncs) > 0 {
			add(model.Record{Kind: model.KindAsyncDone, Ref: p.Asyncs[d.rng.IntN(len(p.Asyncs))], Payload: pl})
		}
	case 15:
		d.all(func(w *world) { w.op(x, model.OpPark) })
	case 16:
		st := []model.Status{model.StatusOK, model.StatusFailed, model.StatusCancelled, model.StatusTimedOut}[d.rng.IntN(4)]
		d.all(func(w *world) { w.finish(x, st, now, pl) })
	case 17:
		if r.Start().Parent.IsZero() {
			st := model.StatusContinuedAsNew
			if d.rng.IntN(3) == 0 {
				st = model.StatusReset
			}
			d.all(func(w *world) { w.continueAs(x, st, now, pl) })
		}
	case 18:
		if len(p.Children) > 0 && d.rng.IntN(2) == 0 {
			// Nothing: a pending child is resolved by delivering its result.
			return
		}
		add(model.Record{Kind: model.KindCancel, Payload: []byte("operator")})
	}
}

// markRenumbered sets the (physical) renumbered flag on some runs of w.
func markRenumbered(w *world, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, x := range w.idents() {
		if rng.IntN(4) == 0 {
			w.run(x).Renumbered = true
		}
	}
}

// randomWorlds builds one random workload into a world per shard count;
// each world leaves different holes in its run numbering and marks
// different runs renumbered, so no two agree physically.
func randomWorlds(tb testing.TB, seed uint64, steps int, counts ...int) []*world {
	var ws []*world
	for i, n := range counts {
		ws = append(ws, newWorld(tb, n, seed*31+uint64(i)+1))
	}
	newDriver(seed, ws...).steps(steps)
	for i, w := range ws {
		markRenumbered(w, seed+uint64(i))
	}
	return ws
}

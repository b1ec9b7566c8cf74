package sim

import (
	"fmt"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// A tx is one event's work: the log entries it adds and the runs it looks
// at. Nothing it does is visible until the engine accepts it into the
// current batch, so an event that must wait (it touches a workflow ID an
// earlier event of the batch changed, or gen's run cap stops it) is simply
// dropped and tried again.
//
// Events of one batch touch disjoint workflow IDs, so every decision an
// event makes reads committed state plus its own tx: batch boundaries are
// invisible to the logical outcome (the engine behaves as if it processed
// the due events one at a time, in key order).
type tx struct {
	e      *Engine
	now    int64
	ops    []journal.ShardOp
	claims map[string]*runView // workflow ID -> its latest run as this tx sees it (nil: none)
	views  []*runView          // every run view this tx created, in order
	alloc  map[int]int         // run numbers this tx took, per shard
	queue  []*runView          // runs whose code must run
	// appended: the tx added a journal record (its time is now), so a
	// reopening engine can tell the clock from the journals.
	appended bool
	// redeliver holds messages whose acknowledgement was lost: they are
	// sent again later.
	redeliver []event
	stats     txStats
}

// txStats are counters a tx adds to the engine's when it is accepted.
type txStats struct {
	rejected int // completion tokens refused
	lostAcks int // deliveries whose acknowledgement was lost on purpose
	repeats  int // deliveries the receiver dropped as repeats
}

// abort unwinds a tx that cannot proceed now.
type abort int

const (
	abortConflict abort = iota + 1 // touches a workflow ID dirty in the batch: flush and retry
	abortCap                       // would start a run past gen's cap: leave it for later
)

// runView is a run as one tx sees it: the committed run plus what the tx
// appended. Its journal shares the committed journal's array: the tx
// appends into the array's spare capacity, which grows through
// model.Run.ExtendJournal when it is full, and Apply later appends the
// same records into the same slots, so that neither copies the journal.
// That is safe because nothing reads a committed journal past its length,
// and because only this view appends to the run until the batch is
// committed (the events of a batch touch disjoint workflow IDs). A tx
// dropped after appending leaves records past the committed length, which
// the next view of the run overwrites.
type runView struct {
	shard    int
	no       model.RunNo
	wf       string
	gen      uint32
	typ      string
	j        []model.Record
	run      *model.Run // the committed run (nil: started by this tx, or j is nil)
	state    model.RunState
	finished int64
	base     int  // journal length when the view was taken; 0 for a run this tx started
	fresh    bool // started by this tx
	touched  bool // this tx changed the run
	queued   bool
	p        *params
}

func viewOf(shard int, r *model.Run) *runView {
	return &runView{shard: shard, no: r.No, wf: r.WorkflowID, gen: r.Gen, typ: r.Type,
		j: r.Journal, run: r, state: r.State, finished: r.Finished,
		base: len(r.Journal)}
}

func (v *runView) ref() model.RunRef { return model.RunRef{Shard: v.shard, Run: v.no} }
func (v *runView) done() bool {
	return v.state == model.StateFinished || v.state == model.StateTombstone
}
func (v *runView) params() params {
	if v.p == nil {
		var p params
		if len(v.j) > 0 {
			p = parseParams(v.j[0].Payload)
		}
		v.p = &p
	}
	return *v.p
}

// newTx starts a tx. The engine runs one tx at a time and keeps nothing
// of a tx once it is accepted or dropped (accept copies its ops into the
// batch), so each tx reuses the previous one's slices and maps.
func (e *Engine) newTx() *tx {
	t := e.txBuf
	if t == nil || len(t.claims) > 64 {
		t = &tx{claims: map[string]*runView{}, alloc: map[int]int{}}
		e.txBuf = t
	}
	clear(t.claims)
	clear(t.alloc)
	*t = tx{e: e, now: e.now, ops: t.ops[:0], claims: t.claims, views: t.views[:0], alloc: t.alloc,
		queue: t.queue[:0], redeliver: t.redeliver[:0]}
	return t
}

// claim marks a workflow ID as this tx's, or aborts if an earlier event of
// the batch changed it.
func (t *tx) claim(wf string) {
	if _, ok := t.claims[wf]; ok {
		return
	}
	if _, dirty := t.e.dirty[wf]; dirty {
		panic(abortConflict)
	}
	t.claims[wf] = nil
}

// latest returns the latest run of a workflow ID (nil: none), claiming it.
func (t *tx) latest(wf string) *runView {
	if v, ok := t.claims[wf]; ok && v != nil {
		return v
	}
	t.claim(wf)
	sh := t.e.shardOf(wf)
	s := t.e.b.shards()[sh]
	no, ok := s.LatestNo(wf)
	if !ok {
		return nil
	}
	v, _ := t.cached(wf, sh, no)
	if v == nil {
		v = viewOf(sh, s.Run(no))
		t.views = append(t.views, v)
	}
	t.claims[wf] = v
	return v
}

// live is the tx's view of run (shard, no) if it is a run of workflow wf
// that has not finished, claiming wf; nil otherwise. Such a run is wf's
// latest (a run of an ID starts only once the ID's latest run is done:
// fresh, child, restart, reset and continue-as-new all check or cause
// that), so live makes it the view t.latest returns without reading the
// ID index, which costs a store read once the shard evicted it.
func (t *tx) live(wf string, shard int, no model.RunNo) *runView {
	t.claim(wf)
	if v := t.claims[wf]; v != nil {
		if v.no == no && v.shard == shard && !v.done() {
			return v
		}
		return nil
	}
	v, ok := t.cached(wf, shard, no)
	if v == nil && ok {
		r := t.e.b.shards()[shard].Run(no)
		if r == nil || r.WorkflowID != wf {
			return nil
		}
		v = viewOf(shard, r)
		t.views = append(t.views, v)
	}
	if v == nil || v.done() {
		return nil
	}
	t.claims[wf] = v
	return v
}

// run returns the run (shard, no) if it is workflow wf's generation gen,
// claiming wf; nil otherwise.
func (t *tx) run(wf string, gen uint32, shard int, no model.RunNo) *runView {
	if v := t.live(wf, shard, no); v != nil {
		if v.gen != gen {
			return nil
		}
		return v
	}
	if v := t.latest(wf); v != nil && v.no == no && v.shard == shard {
		if v.gen != gen {
			return nil
		}
		return v
	}
	return t.viewAt(wf, gen, shard, no)
}

// ended is run for a finished run (shard, no) of workflow wf's generation
// gen that the tx only tombstones: it claims wf but does not look up wf's
// latest run, which costs an ID index read from the store once the shard
// evicted it, nor the run's journal (the checkpoint archives the journal
// the store holds), nor, when the shard knows the run finished and has
// no tombstone yet, its entry (model.Shard.FinishedEvicted); otherwise
// the shard reads the entry alone. A tombstone touches no other run of
// wf and appends nothing, so its view need not be the one t.latest would
// share; it has no journal (j nil, base the journal's length or 0:
// derive finds nothing in it).
func (t *tx) ended(wf string, gen uint32, shard int, no model.RunNo) *runView {
	t.claim(wf)
	if v, ok := t.cached(wf, shard, no); v != nil || !ok {
		return v
	}
	s := t.e.b.shards()[shard]
	if s.FinishedEvicted(no) {
		// Its entry is read by the checkpoint (model.Shard.Unread): the
		// view needs none of it.
		v := &runView{shard: shard, no: no, wf: wf, gen: gen, state: model.StateFinished}
		t.views = append(t.views, v)
		return v
	}
	h, ok := s.Head(no)
	if !ok || h.WorkflowID != wf || h.Gen != gen {
		return nil
	}
	v := &runView{shard: shard, no: no, wf: wf, gen: gen, typ: h.Type, state: h.State, finished: h.Finished,
		base: int(h.Records)}
	t.views = append(t.views, v)
	return v
}

// cached is the tx's view of run (shard, no) of wf if it has one, and
// whether shard is a shard at all (so whether the run can be read).
func (t *tx) cached(wf string, shard int, no model.RunNo) (*runView, bool) {
	for _, v := range t.views {
		if v.wf == wf && v.no == no && v.shard == shard {
			return v, true
		}
	}
	return nil, shard >= 0 && shard < len(t.e.b.shards())
}

// viewAt is the tx's view of run (shard, no) if it is workflow wf's
// generation gen, reading it from its shard the first time; nil otherwise.
func (t *tx) viewAt(wf string, gen uint32, shard int, no model.RunNo) *runView {
	if v, ok := t.cached(wf, shard, no); v != nil || !ok {
		return v
	}
	r := t.e.b.shards()[shard].Run(no)
	if r == nil || r.WorkflowID != wf || r.Gen != gen {
		return nil
	}
	v := viewOf(shard, r)
	t.views = append(t.views, v)
	return v
}

// append adds rec to v's journal (loading a parked run first) and returns
// its position.
func (t *tx) append(v *runView, rec model.Record) uint32 {
	if v.state == model.StateParked {
		t.ops = append(t.ops, journal.ShardOp{Shard: v.shard, Op: model.Op{Kind: model.OpLoad, Run: v.no}})
		v.state = model.StateRunning
	}
	if v.state != model.StateRunning {
		panic(fmt.Sprintf("sim: append %s to %s#%d, which is %s", rec.Kind, v.wf, v.gen, v.state))
	}
	rec.Pos = uint32(len(v.j))
	t.ops = append(t.ops, journal.ShardOp{Shard: v.shard, Op: model.Op{Kind: model.OpAppend, Run: v.no, Rec: rec}})
	if v.run != nil {
		v.j = v.run.ExtendJournal(v.j, 1)
	}
	v.j = append(v.j, rec)
	v.touched = true
	t.appended = true
	if rec.Kind == model.KindDone {
		v.state, v.finished = model.StateFinished, rec.Time
	}
	return rec.Pos
}

// newRun takes the next run number of a shard for a run this tx starts.
func (t *tx) newRun(shard int) model.RunNo {
	e := t.e
	total := 0
	for _, n := range t.alloc {
		total += n
	}
	if e.cap > 0 && e.started+e.batchStarted+total >= e.cap {
		panic(abortCap)
	}
	no := e.b.shards()[shard].NextRun + model.RunNo(e.pendingNext[shard]+t.alloc[shard])
	t.alloc[shard]++
	return no
}

// start begins run no (from newRun) with the Start record rec.
func (t *tx) start(shard int, no model.RunNo, rec model.Record) *runView {
	rec.Kind, rec.Pos = model.KindStart, 0
	t.claim(rec.WorkflowID)
	// The code of a new run usually appends a few records at once. Apply
	// starts the run's journal in the same array (model.Op.Journal).
	j := append(make([]model.Record, 0, 8), rec)
	t.ops = append(t.ops, journal.ShardOp{Shard: shard, Op: model.Op{Kind: model.OpStart, Run: no, Rec: rec, Journal: j}})
	v := &runView{shard: shard, no: no, wf: rec.WorkflowID, gen: rec.Gen, typ: rec.Type,
		j: j, state: model.StateRunning, fresh: true, touched: true}
	t.appended = true
	t.claims[rec.WorkflowID] = v
	t.views = append(t.views, v)
	return v
}

func (t *tx) tombstone(v *runView) {
	t.ops = append(t.ops, journal.ShardOp{Shard: v.shard, Op: model.Op{Kind: model.OpTombstone, Run: v.no}})
	v.state = model.StateTombstone
	v.touched = true
}

// seen records, on the receiver's shard, that message id was delivered
// to workflow wf (its target): the dedup entry belongs with wf.
func (t *tx) seen(shard int, id, wf string) {
	t.ops = append(t.ops, journal.ShardOp{Shard: shard, Op: model.Op{Kind: model.OpSeen, MsgID: id, WorkflowID: wf}})
}

func (t *tx) ack(shard int, id string) {
	t.ops = append(t.ops, journal.ShardOp{Shard: shard, Op: model.Op{Kind: model.OpAck, MsgID: id}})
}

// wake queues v's workflow code to run before the tx ends.
func (t *tx) wake(v *runView) {
	if !v.queued {
		v.queued = true
		t.queue = append(t.queue, v)
	}
}

// settle runs queued workflow code until nothing is left to do, then parks
// the runs that wait on nothing near.
func (t *tx) settle() {
	for len(t.queue) > 0 {
		v := t.queue[0]
		t.queue = t.queue[1:]
		v.queued = false
		if v.state == model.StateRunning || v.state == model.StateParked {
			runCode(t, v)
		}
	}
	for _, v := range t.views {
		if v.touched && v.state == model.StateRunning && t.e.shouldPark(v, t.now) {
			t.ops = append(t.ops, journal.ShardOp{Shard: v.shard, Op: model.Op{Kind: model.OpPark, Run: v.no}})
			v.state = model.StateParked
		}
	}
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// Config tunes the engine. The zero value of a field means its default.
type Config struct {
	Retention       int64 // ms a finished run is kept before its tombstone (default 1h)
	Tick            int64 // ms between the engine's ticks (default 1s)
	CheckpointEvery int64 // virtual ms between checkpoints (default 10 min)
	ParkAfter       int64 // park a run whose next timer is further away than this (default 5 min)
	BatchOps        int   // flush a batch once it holds this many log entries (default 20000)
	// MaxResident checkpoints early, at the end of a round that appended
	// records, once more runs than this are in memory (default 7500):
	// each checkpoint of a directory drops the runs it wrote from memory,
	// so this bounds the engine's memory whatever the run count. (It was
	// 20000 while the events of finished runs read those runs back, which
	// then counted; 15000 gave about as many checkpoints without them:
	// at 300k runs, 8 shards, 40 against 38, where 20000 gave 26 and cost
	// more CPU, bench/results/gen8.md. 7500 since session 18: the resident
	// runs' journals are the largest part of gen's live heap, and a lower
	// heap limit needs a smaller one; 348 checkpoints at 1M runs,
	// bench/results/gen9.md. A directory generated to hold more than
	// journal.LargeBuildRuns runs keeps largeMaxResident, with the larger
	// caches it is built with.)
	MaxResident int
}

// defaultMaxResident is MaxResident's default.
const defaultMaxResident = 7500

// largeMaxResident is MaxResident's default for gen past
// journal.LargeBuildRuns runs (GenOptions.check): fewer read-backs of
// evicted runs for a larger live heap, as until session 18.
const largeMaxResident = 15000

// DefaultRetention is how long finished runs are kept by default.
const DefaultRetention = 1 * hour

func (c Config) withDefaults() Config {
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.Tick <= 0 {
		c.Tick = 1 * second
	}
	if c.CheckpointEvery <= 0 {
		c.CheckpointEvery = 10 * minute
	}
	if c.ParkAfter <= 0 {
		c.ParkAfter = 5 * minute
	}
	if c.BatchOps <= 0 {
		c.BatchOps = 20000
	}
	if c.MaxResident <= 0 {
		c.MaxResident = defaultMaxResident
	}
	return c
}

// Stats count what an engine did.
type Stats struct {
	Rounds      int            `json:"rounds"`
	BusyRounds  int            `json:"busy_rounds"` // rounds that appended journal records
	Batches     int            `json:"batches"`
	Ops         int            `json:"ops"`
	Checkpoints int            `json:"checkpoints"`
	Events      map[string]int `json:"events"`  // processed events by kind
	Flushes     int            `json:"flushes"` // batches cut early because two events touched one workflow ID
	Rejected    int            `json:"rejected_tokens"`
	LostAcks    int            `json:"lost_acks"`
	Repeats     int            `json:"repeats_dropped"`
}

// Engine is the simulated durable-workflow engine over one data directory
// (or in-memory shards).
type Engine struct {
	b   backend
	n   int
	cfg Config
	now int64

	main    evQueue  // everything due that keeps the engine busy
	tombs   evQueue  // retention ends: never a reason to keep driving
	scratch *scratch // where the queues spill (nil: they stay in memory)
	spillAt int      // how many events a queue holds in memory before it spills (0: spillAbove)

	// the batch being built
	batch        []journal.ShardOp
	dirty        map[string]struct{}
	pendingNext  []int
	batchStarted int

	started  int // runs ever started in the directory (committed)
	cap      int // gen: start no run past this many (0: no cap)
	fresh    *freshSource
	held     []event // events held back by the cap
	noAutoCP bool    // gen's tail: no periodic checkpoint

	recErr   error // recover: reading the runs back failed
	lastCP   int64
	appended bool // the current round appended a journal record
	stats    Stats
	txBuf    *tx     // the tx newTx reuses
	dueBuf   []event // the slice due reuses
	progress func(Progress)
}

// Progress is reported at every checkpoint of a long gen or drive.
type Progress struct {
	Now     int64 // virtual clock (ms)
	Started int   // runs started: by Generate, all of them; by Drive, those it started
	Batches int   // batches committed so far
	// Phase is "" while the engine runs; "census" while it closes the
	// directory and counts what it holds, Done of Total shards.
	Phase       string
	Done, Total int
}

// censusProgress is the progress callback of the census that ends a gen or
// a drive: Phase "census", starting at 0 shards.
func censusProgress(report func(Progress), shards int) func(done, total int) {
	if report == nil {
		return nil
	}
	report(Progress{Phase: "census", Total: shards})
	return func(done, total int) { report(Progress{Phase: "census", Done: done, Total: total}) }
}

func newEngine(b backend, cfg Config) *Engine {
	e := &Engine{b: b, n: len(b.shards()), cfg: cfg.withDefaults(), dirty: map[string]struct{}{}}
	e.pendingNext = make([]int, e.n)
	e.stats.Events = map[string]int{}
	return e
}

func (e *Engine) shardOf(wf string) int { return model.ShardOf(wf, e.n) }

// Now is the engine's virtual clock (ms).
func (e *Engine) Now() int64 { return e.now }

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats { return e.stats }

// recover rebuilds what the engine keeps outside the directory — its
// pending events and the clock — from the shards alone. The clock is the
// later of the last checkpoint's and the latest time a journal record
// happened at (every record but timers and retries carries the time it
// was appended; the log itself has no clock).
func (e *Engine) recover() {
	e.main, e.tombs = e.newQueue('m'), e.newQueue('t')
	e.started = 0
	now := e.b.now()
	n := 0
	for si, s := range e.b.shards() {
		e.started += int(s.NextRun) - 1
		err := e.b.allRuns(si, func(r *model.Run) error {
			if r.State == model.StateTombstone {
				return nil
			}
			for i := range r.Journal {
				rec := &r.Journal[i]
				if rec.Kind != model.KindTimer && rec.Kind != model.KindAttempt && rec.Time > now {
					now = rec.Time
				}
			}
			e.derive(viewOf(si, r), 0, false, e.pushValid)
			if n++; n%1024 == 0 {
				e.b.trim()
			}
			return nil
		})
		e.b.trim()
		if err != nil && e.recErr == nil {
			e.recErr = err
		}
	}
	e.now = now
	e.lastCP = now
	// Messages not yet acknowledged are sent again, due when they were
	// first due (the message carries its send time).
	for si, s := range e.b.shards() {
		for id, m := range s.Outbox {
			e.push(msgEvent(id, m.Target, m.Kind, si, m.Sent))
		}
	}
}

// newQueue is an event queue that spills to the engine's scratch store
// (if any) under prefix.
func (e *Engine) newQueue(prefix byte) evQueue {
	limit := e.spillAt
	if limit <= 0 {
		limit = spillAbove
	}
	if e.scratch == nil {
		return newEvQueue(nil, limit)
	}
	return newEvQueue(&spill{scratch: e.scratch, prefix: prefix}, limit)
}

// queueErr is the first scratch store error of the event queues.
func (e *Engine) queueErr() error {
	if e.main.err != nil {
		return e.main.err
	}
	return e.tombs.err
}

func (e *Engine) pushValid(ev event) {
	if e.valid(&ev) {
		e.push(ev)
	}
}

func (e *Engine) push(ev event) {
	if ev.kind == evTombstone {
		e.tombs.push(ev)
	} else {
		e.main.push(ev)
	}
}

// peek drops invalid events from the top of h and returns the first valid
// one (nil: none).
func (e *Engine) peek(h *evQueue) *event {
	for h.Len() > 0 {
		if t := h.top(); e.valid(t) {
			return t
		}
		h.pop()
	}
	return nil
}

// busy reports whether anything but retention is still pending: a valid
// event, an undelivered message or a workload entry not yet started.
func (e *Engine) busy() bool {
	return e.peek(&e.main) != nil || (e.fresh != nil && e.fresh.more())
}

// nextTime is the next tick with something due, if any.
func (e *Engine) nextTime(includeTombs bool) (int64, bool) {
	best, ok := int64(0), false
	consider := func(t int64) {
		if !ok || t < best {
			best, ok = t, true
		}
	}
	if t := e.peek(&e.main); t != nil {
		consider(t.at)
	}
	if includeTombs {
		if t := e.peek(&e.tombs); t != nil {
			consider(t.at)
		}
	}
	if e.fresh != nil && e.fresh.more() {
		consider(e.fresh.at())
	}
	if !ok {
		return 0, false
	}
	tick := e.cfg.Tick
	next := (best + tick - 1) / tick * tick
	if next <= e.now {
		next = e.now
	}
	return next, true
}

// due collects everything due at the current time, in key order, into
// the slice the previous round's due events were in (round is done with
// them by then).
func (e *Engine) due() []event {
	out := e.dueBuf[:0]
	for _, h := range []*evQueue{&e.main, &e.tombs} {
		for h.Len() > 0 && h.top().at <= e.now {
			out = append(out, h.pop())
		}
	}
	if e.fresh != nil {
		for e.fresh.more() && e.fresh.at() <= e.now {
			out = append(out, e.fresh.next())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(&out[j]) })
	e.dueBuf = out
	return out
}

// round processes everything due now, one event at a time in key order,
// and commits it. It returns how many events changed something.
func (e *Engine) round() (int, error) {
	e.stats.Rounds++
	e.appended = false
	done := 0
	for _, ev := range e.due() {
		ok, err := e.try(ev)
		if err != nil {
			return done, err
		}
		if ok {
			done++
		}
	}
	return done, e.flush()
}

// try runs one event in a tx and accepts it into the batch.
func (e *Engine) try(ev event) (bool, error) {
	for attempt := 0; ; attempt++ {
		t := e.newTx()
		changed, ab, err := e.runTx(t, &ev)
		switch {
		case err != nil:
			return false, err
		case ab == abortConflict && attempt == 0:
			e.stats.Flushes++
			if err := e.flush(); err != nil {
				return false, err
			}
			continue
		case ab == abortConflict:
			return false, fmt.Errorf("sim: event %s %s#%d@%d conflicts with an empty batch", ev.kind, ev.wf, ev.gen, ev.pos)
		case ab == abortCap:
			if ev.kind != evFresh {
				e.held = append(e.held, ev)
			}
			return false, nil
		}
		if !changed {
			return false, nil
		}
		e.accept(t, &ev)
		if len(e.batch) >= e.cfg.BatchOps {
			return true, e.flush()
		}
		return true, nil
	}
}

func (e *Engine) runTx(t *tx, ev *event) (bool, abort, error) {
	return e.runTxFunc(t, func() bool { return e.handle(t, ev) })
}

// runTxFunc runs f in t, then the workflow code it woke; it turns the
// panics that unwind a tx into results.
func (e *Engine) runTxFunc(t *tx, f func() bool) (changed bool, ab abort, err error) {
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abort); ok {
				ab = a
				return
			}
			if s, ok := r.(string); ok {
				err = errors.New(s)
				return
			}
			panic(r)
		}
	}()
	changed = f()
	if changed {
		t.settle()
	}
	return changed, 0, nil
}

// accept moves a finished tx into the batch and schedules what its new
// records imply.
func (e *Engine) accept(t *tx, ev *event) {
	e.stats.Events[ev.kind.String()]++
	e.appended = e.appended || t.appended
	e.stats.Rejected += t.stats.rejected
	e.stats.LostAcks += t.stats.lostAcks
	e.stats.Repeats += t.stats.repeats
	e.batch = append(e.batch, t.ops...)
	for wf := range t.claims {
		e.dirty[wf] = struct{}{}
	}
	for sh, n := range t.alloc {
		e.pendingNext[sh] += n
		e.batchStarted += n
	}
	for _, ev := range t.redeliver {
		e.push(ev)
	}
	for _, v := range t.views {
		if v.touched {
			from := v.base
			if v.fresh {
				from = 0
			}
			e.derive(v, from, true, e.push)
		}
	}
}

// flush commits the batch.
func (e *Engine) flush() error {
	if len(e.batch) == 0 {
		return nil
	}
	e.b.setNow(e.now)
	if err := e.b.commit(e.batch); err != nil {
		return fmt.Errorf("commit at %d ms: %w", e.now, err)
	}
	e.stats.Batches++
	e.stats.Ops += len(e.batch)
	e.started += e.batchStarted
	e.batch = e.batch[:0]
	clear(e.dirty)
	clear(e.pendingNext)
	e.batchStarted = 0
	return nil
}

func (e *Engine) checkpoint() error {
	if err := e.flush(); err != nil {
		return err
	}
	e.b.setNow(e.now)
	if err := e.b.checkpoint(); err != nil {
		return fmt.Errorf("checkpoint at %d ms: %w", e.now, err)
	}
	e.stats.Checkpoints++
	e.lastCP = e.now
	if e.progress != nil {
		e.progress(Progress{Now: e.now, Started: e.started, Batches: e.stats.Batches})
	}
	return nil
}

// shouldPark decides whether a run that waits goes to the run store: when
// it waits for no child and nothing it waits for is due within ParkAfter.
func (e *Engine) shouldPark(v *runView, now int64) bool {
	next := int64(-1)
	for pos := range v.j {
		if v.j[pos].Kind == model.KindChild && !isClosed(v.j, uint32(pos)) {
			return false
		}
	}
	if d := v.j[0].Deadline; d > 0 {
		next = d
	}
	for pos := range v.j {
		r := &v.j[pos]
		var at int64
		switch {
		case (r.Kind == model.KindTimer || r.Kind == model.KindAttempt) && r.Time != 0:
			at = r.Time
		case r.Kind == model.KindWait && r.Deadline != 0:
			at = r.Deadline
		default:
			continue
		}
		if (next < 0 || at < next) && !isClosed(v.j, uint32(pos)) {
			next = at
		}
	}
	return next < 0 || next-now > e.cfg.ParkAfter
}

// step advances the engine by one round, or moves the clock to the next
// tick with work when nothing is due. It reports false when nothing is
// left that keeps the engine busy.
func (e *Engine) step(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	n, err := e.round()
	if err == nil {
		err = e.queueErr()
	}
	if err != nil {
		return false, err
	}
	if e.appended {
		e.stats.BusyRounds++
	}
	if n == 0 {
		if !e.busy() {
			return false, nil
		}
		next, ok := e.nextTime(true)
		if !ok || next <= e.now {
			return false, nil
		}
		e.now = next
	}
	if !e.noAutoCP && (e.now-e.lastCP >= e.cfg.CheckpointEvery || e.appended && e.b.resident() > e.cfg.MaxResident) {
		if err := e.checkpoint(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// Drive runs every run to completion: it delivers messages, fires timers
// and feeds the scripted outside world until nothing but retention is
// pending, then checkpoints.
func (e *Engine) Drive(ctx context.Context) error {
	e.fresh, e.cap, e.noAutoCP = nil, 0, false
	for _, ev := range e.held {
		e.push(ev)
	}
	e.held = nil
	for {
		more, err := e.step(ctx)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if err := e.checkpoint(); err != nil {
		return err
	}
	return e.checkUnfinished()
}

// checkUnfinished fails if a run is still waiting: a script or world bug
// that would make drive loop forever or stop short.
func (e *Engine) checkUnfinished() error {
	for _, s := range e.b.shards() {
		err := e.b.eachRun(s.Index, func(r *model.Run) error {
			if r.State == model.StateRunning || r.State == model.StateParked {
				p := model.PendingOf(r)
				return fmt.Errorf("sim: run %s#%d (%s, shard %d run %d) is still %s with nothing due: pending %+v",
					r.WorkflowID, r.Gen, r.Type, s.Index, r.No, r.State, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(s.Outbox) > 0 {
			return fmt.Errorf("sim: shard %d still has %d undelivered messages", s.Index, len(s.Outbox))
		}
	}
	return nil
}

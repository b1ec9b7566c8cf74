package journal

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fusee-dev/fusee/journal/model"
	"pgregory.net/rapid"
)

// workload draws random valid ops against a model: one in-memory shard per
// shard of the directory, changed by Apply as each op is drawn. Every op it
// returns has been applied to the model, so the model is the state a
// directory that committed the same ops must recover to. It covers every
// op kind and every record kind, with timers, waits, children, updates and
// asyncs opened and closed, so that outputs (timers, outbox, index) are
// created and removed.
type workload struct {
	model []*model.Shard
	ids   [][]string // per shard: workflow IDs that hash to it
	msgs  int        // message IDs drawn so far
	time  int64
}

func newWorkload(shards int) *workload {
	w := &workload{time: 1000}
	for i := range shards {
		w.model = append(w.model, model.NewShard(i, shards))
	}
	w.ids = make([][]string, shards)
	for n := 0; ; n++ {
		id := fmt.Sprintf("wf-%d", n)
		k := model.ShardOf(id, shards)
		if len(w.ids[k]) < 6 {
			w.ids[k] = append(w.ids[k], id)
		}
		done := true
		for _, l := range w.ids {
			done = done && len(l) == 6
		}
		if done {
			break
		}
	}
	return w
}

func (w *workload) msgID() string {
	w.msgs++
	return fmt.Sprintf("m%d", w.msgs)
}

// batch draws 1..max ops (possibly for several shards).
func (w *workload) batch(t *rapid.T, max int) []ShardOp {
	n := rapid.IntRange(1, max).Draw(t, "batch")
	ops := make([]ShardOp, 0, n)
	for range n {
		ops = append(ops, w.op(t))
	}
	return ops
}

// op draws one op, applies it to the model and returns it.
func (w *workload) op(t *rapid.T) ShardOp {
	k := rapid.IntRange(0, len(w.model)-1).Draw(t, "shard")
	s := w.model[k]
	w.time += int64(rapid.IntRange(0, 50).Draw(t, "dt"))
	var op model.Op
	for op.Kind == 0 {
		switch rapid.IntRange(0, 9).Draw(t, "action") {
		case 0, 1:
			op = w.start(t, s)
		case 2, 3, 4, 5:
			if r := pickRun(t, s, model.StateRunning); r != nil {
				op = model.Op{Kind: model.OpAppend, Run: r.No, Rec: w.record(t, s, r)}
			}
		case 6:
			if r := pickRun(t, s, model.StateRunning); r != nil {
				op = model.Op{Kind: model.OpPark, Run: r.No}
			} else if r := pickRun(t, s, model.StateParked); r != nil {
				op = model.Op{Kind: model.OpLoad, Run: r.No}
			}
		case 7:
			if ids := slices.Sorted(maps.Keys(s.Outbox)); len(ids) > 0 {
				op = model.Op{Kind: model.OpAck, MsgID: rapid.SampledFrom(ids).Draw(t, "ack")}
			}
		case 8:
			op = model.Op{Kind: model.OpSeen, MsgID: fmt.Sprintf("in-%d", rapid.IntRange(0, 30).Draw(t, "seen")),
				WorkflowID: rapid.SampledFrom([]string{"wf-a", "wf-b", "wf-c"}).Draw(t, "receiver")}
		case 9:
			if r := pickRun(t, s, model.StateFinished); r != nil {
				op = model.Op{Kind: model.OpTombstone, Run: r.No}
			}
		}
	}
	if err := s.Apply(&op); err != nil {
		t.Fatalf("workload drew an op its model refuses: %s on shard %d: %v", op.Kind, k, err)
	}
	s.LSN++
	return ShardOp{Shard: k, Op: op}
}

// pickRun draws a run in the given state, or nil if there is none.
func pickRun(t *rapid.T, s *model.Shard, state model.RunState) *model.Run {
	var nos []model.RunNo
	for no, r := range s.Runs {
		if r.State == state {
			nos = append(nos, no)
		}
	}
	if len(nos) == 0 {
		return nil
	}
	slices.Sort(nos)
	return s.Runs[rapid.SampledFrom(nos).Draw(t, "run")]
}

func payload(t *rapid.T) []byte {
	if p := rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(t, "payload"); len(p) > 0 {
		return p
	}
	return nil
}

func (w *workload) start(t *rapid.T, s *model.Shard) model.Op {
	id := rapid.SampledFrom(w.ids[s.Index]).Draw(t, "id")
	rec := model.Record{Kind: model.KindStart, WorkflowID: id, Type: "order", Gen: 1, Time: w.time, Payload: payload(t)}
	if prev := s.Latest(id); prev != nil {
		rec.Gen = prev.Gen + 1
		rec.Origin = rapid.SampledFrom([]model.Origin{model.OriginRestart, model.OriginContinued, model.OriginReset}).Draw(t, "origin")
		rec.Pred = model.RunRef{Shard: s.Index, Run: prev.No}
	} else if rapid.Bool().Draw(t, "child") {
		rec.Origin = model.OriginChild
		rec.Parent = model.ParentRef{Shard: rapid.IntRange(0, s.Count-1).Draw(t, "pshard"), Run: model.RunNo(rapid.IntRange(1, 40).Draw(t, "prun")), Pos: 3}
		rec.ParentID = "parent-" + id
	}
	if rapid.Bool().Draw(t, "deadline") {
		rec.Deadline = w.time + 5000
	}
	return model.Op{Kind: model.OpStart, Run: s.NextRun, Rec: rec}
}

// record draws the next journal record of running run r.
func (w *workload) record(t *rapid.T, s *model.Shard, r *model.Run) model.Record {
	pos := uint32(len(r.Journal))
	p := model.PendingOf(r)
	rec := model.Record{Pos: pos}
	later := w.time + int64(rapid.IntRange(1, 10000).Draw(t, "later"))
	open := func(list []uint32) (uint32, bool) {
		if len(list) == 0 {
			return 0, false
		}
		return rapid.SampledFrom(list).Draw(t, "ref"), true
	}
	switch rapid.IntRange(0, 17).Draw(t, "kind") {
	case 0:
		rec.Kind, rec.Name, rec.Status, rec.Attempt, rec.Payload = model.KindStep, "charge", model.StatusOK, 1, payload(t)
		rec.Key = r.Key(pos)
	case 1:
		rec.Kind, rec.Name, rec.Attempt, rec.Time = model.KindAttempt, "charge", 1, later
	case 2:
		rec.Kind, rec.Name, rec.Time = model.KindTimer, "sleep", later
	case 3:
		ref, ok := open(p.Timers)
		if !ok {
			return w.record(t, s, r)
		}
		rec.Kind, rec.Ref, rec.Time = model.KindFired, ref, w.time
	case 4:
		rec.Kind, rec.Name, rec.MsgID, rec.Payload = model.KindSignal, "go", w.msgID(), payload(t)
		rec.By = model.RunRef{Shard: s.Index, Run: 1}
	case 5:
		rec.Kind, rec.Name = model.KindWait, "go"
		if rapid.Bool().Draw(t, "forever") {
			rec.Deadline = later
		}
	case 6:
		ref, ok := open(p.Waits)
		if !ok {
			return w.record(t, s, r)
		}
		rec.Kind, rec.Ref, rec.Status = model.KindWaited, ref, model.StatusOK
		if sig, ok := open(p.Signals); ok {
			rec.MsgID = r.Journal[sig].MsgID
		} else {
			rec.Status = model.StatusTimedOut
		}
	case 7:
		rec.Kind, rec.Name, rec.Time, rec.Payload = model.KindValue, "random", w.time, payload(t)
	case 8:
		rec.Kind, rec.WorkflowID, rec.Type, rec.MsgID, rec.Payload = model.KindChild, "child-"+w.msgID(), "sub", w.msgID(), payload(t)
	case 9:
		ref, ok := open(p.Children)
		if !ok {
			return w.record(t, s, r)
		}
		rec.Kind, rec.Ref, rec.Status, rec.Payload = model.KindChildDone, ref, model.StatusOK, payload(t)
	case 10:
		rec.Kind, rec.WorkflowID, rec.Name, rec.MsgID = model.KindSend, "peer", "poke", w.msgID()
		rec.Attempt = uint32(rapid.IntRange(model.SendSignal, model.SendCancel).Draw(t, "sendflags"))
	case 11:
		rec.Kind, rec.Name, rec.By = model.KindCancel, "stop", model.RunRef{Shard: 0, Run: 1}
	case 12:
		rec.Kind, rec.Name, rec.MsgID, rec.Payload = model.KindUpdate, "set", w.msgID(), payload(t)
		if rapid.Bool().Draw(t, "caller") {
			rec.Parent, rec.ParentID = model.ParentRef{Shard: 0, Run: 2, Pos: 1}, "caller"
		}
	case 13:
		ref, ok := open(p.Updates)
		if !ok {
			return w.record(t, s, r)
		}
		rec.Kind, rec.Ref, rec.Status, rec.Payload = model.KindUpdateDone, ref, model.StatusOK, payload(t)
	case 14:
		rec.Kind, rec.Name, rec.Payload = model.KindSearchAttr, "region", payload(t)
	case 15:
		rec.Kind, rec.Token = model.KindAsync, model.Token{Shard: s.Index, Run: r.No, Pos: pos}
	case 16:
		ref, ok := open(p.Asyncs)
		if !ok {
			return w.record(t, s, r)
		}
		rec.Kind, rec.Ref, rec.Payload = model.KindAsyncDone, ref, payload(t)
	case 17:
		rec.Kind, rec.Time, rec.Payload = model.KindDone, w.time, payload(t)
		rec.Status = rapid.SampledFrom([]model.Status{model.StatusOK, model.StatusFailed, model.StatusCancelled, model.StatusContinuedAsNew}).Draw(t, "status")
	}
	return rec
}

// checkShardsEqual fails t with the differences between got and want.
func checkShardsEqual(t interface {
	Helper()
	Fatalf(string, ...any)
}, what string, got, want []*model.Shard) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d shards, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := model.DiffShards(got[i], want[i]); d != "" {
			t.Fatalf("%s: shard %d differs (got vs want):\n%s", what, i, d)
		}
	}
}

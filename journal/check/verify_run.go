package check

import (
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
)

// The rules of one run that need nothing but the run, its journal (or
// archived history) and where it is: its number, its shard, its state,
// the shape of its journal, the fields each record's kind requires, and
// its entry against its Start and Done records, what its records say of
// the run itself (keys, tokens, origin); and, further down, the rules of
// a reference once the run it names is found. The streaming verifier
// makes them as each run passes (verifier.runEntry) and as its joins
// resolve (verifier.landed); so does the whole-memory oracle of the tests
// (oracle_test.go), whose independence lies in how it loads and resolves,
// not in a copy of these rules. The ID index, timers, outbox and dedup,
// which need more than one run, each makes in its own way.

// addRunFinding reports a finding about the run being checked.
type addRunFinding func(k Kind, format string, args ...any)

// runPlace is where a run (or a stored message, a dedup entry) is
// checked: its shard's index, the directory's shard count, the shard's
// next run number and store generation.
type runPlace struct {
	shard, shards int
	nextRun       model.RunNo
	storeGen      uint64
}

// checkRun checks run r at place p: its number, placement, state and
// journal. archive is its archived history, archived whether one is
// stored under its number. It returns the journal the reference checks
// go through, nil when the run has none to check.
func checkRun(add addRunFinding, p runPlace, r *model.Run, archive []model.Record, archived bool) []model.Record {
	switch {
	case r.No == 0 || r.No >= model.NoSuchRun:
		add(KindRunNumberInvalid, "run number %d is outside 1..%d (%d is reserved for references to no run)", r.No, model.NoSuchRun-1, model.NoSuchRun)
	case r.No >= p.nextRun:
		add(KindRunNumberUnissued, "run number %d is not below the shard's next run number %d", r.No, p.nextRun)
	}
	if want := model.ShardOf(r.WorkflowID, p.shards); want != p.shard {
		add(KindWrongShard, "workflow %q belongs on shard %d of %d", r.WorkflowID, want, p.shards)
	}
	if r.State < model.StateRunning || r.State > model.StateTombstone {
		add(KindRunState, "unknown state %d", uint8(r.State))
	}
	j := r.Journal
	if r.State == model.StateTombstone {
		if len(r.Journal) != 0 {
			add(KindStateJournal, "a tombstone still holds %d journal records", len(r.Journal))
		}
		if !archived {
			add(KindStateJournal, "a tombstone without an archived history")
			return nil
		}
		j = archive
	}
	if len(j) == 0 {
		add(KindJournalEmpty, "the run has no records")
		return nil
	}
	journalShape(add, p, r, j)
	runHeader(add, r, j)
	if j[0].Kind == model.KindStart {
		startOrigin(add, &j[0])
	}
	return j
}

// journalShape checks positions, kinds, completions and where Done sits.
func journalShape(add addRunFinding, p runPlace, r *model.Run, j []model.Record) {
	if j[0].Kind != model.KindStart {
		add(KindJournalStart, "the first record is %s, want start", j[0].Kind)
	}
	completedBy := map[uint32]int{}
	signals := map[string]int{}  // buffered signal message ID -> position
	consumed := map[string]int{} // signal message ID -> the Waited that consumed it
	for i := range j {
		rec := &j[i]
		if int(rec.Pos) != i {
			add(KindJournalPos, "record %d (%s) says it is at position %d", i, rec.Kind, rec.Pos)
		}
		if rec.Kind == 0 || rec.Kind > model.KindDone {
			add(KindJournalKind, "record %d has unknown kind %d", i, uint8(rec.Kind))
			continue
		}
		if rec.Kind == model.KindStart && i > 0 {
			add(KindJournalStart, "a second start record at %d", i)
		}
		if rec.Kind == model.KindDone && i != len(j)-1 {
			add(KindJournalDone, "done at %d is not the last record (%d records)", i, len(j))
		}
		if want, ok := completes[rec.Kind]; ok {
			switch {
			case int(rec.Ref) >= i:
				add(KindCompletion, "%s at %d completes position %d, not an earlier one", rec.Kind, i, rec.Ref)
			case !want[j[rec.Ref].Kind]:
				add(KindCompletion, "%s at %d completes %s at %d", rec.Kind, i, j[rec.Ref].Kind, rec.Ref)
			default:
				if prev, dup := completedBy[rec.Ref]; dup {
					add(KindCompletionDup, "position %d is completed at %d and again at %d", rec.Ref, prev, i)
				} else {
					completedBy[rec.Ref] = i
				}
			}
		}
		switch {
		case rec.Kind == model.KindSignal && rec.MsgID != "":
			signals[rec.MsgID] = i
		case rec.Kind == model.KindWaited && rec.MsgID != "":
			// A Waited's message ID may also name a result delivered to
			// the waiting position (an update's caller), which leaves no
			// Signal record; only a buffered signal can be consumed twice.
			if _, ok := signals[rec.MsgID]; !ok {
				break
			}
			if prev, dup := consumed[rec.MsgID]; dup {
				add(KindCompletion, "waited at %d consumes signal %q, already consumed at %d", i, rec.MsgID, prev)
			} else {
				consumed[rec.MsgID] = i
			}
		}
		recordFields(add, rec)
		ownRefs(add, p, r, rec)
	}
	last := j[len(j)-1].Kind == model.KindDone
	switch r.State {
	case model.StateFinished, model.StateTombstone:
		if !last {
			add(KindStateJournal, "the run is %s but its last record is %s, not done", r.State, j[len(j)-1].Kind)
		}
	case model.StateRunning, model.StateParked:
		if last {
			add(KindStateJournal, "the run is %s but its journal ends with done", r.State)
		}
	}
}

// completes maps each completion kind to the kinds it may complete.
var completes = map[model.Kind]map[model.Kind]bool{
	model.KindFired:      {model.KindTimer: true, model.KindAttempt: true},
	model.KindWaited:     {model.KindWait: true},
	model.KindChildDone:  {model.KindChild: true},
	model.KindUpdateDone: {model.KindUpdate: true},
	model.KindAsyncDone:  {model.KindAsync: true},
}

// recordFields checks fields a record's kind requires.
func recordFields(addRun addRunFinding, rec *model.Record) {
	add := func(format string, args ...any) {
		addRun(KindRecordFields, "%s at %d: %s", rec.Kind, rec.Pos, fmt.Sprintf(format, args...))
	}
	if rec.Status > model.StatusReset {
		add("unknown status %d", uint8(rec.Status))
	}
	switch rec.Kind {
	case model.KindStart:
		if rec.WorkflowID == "" {
			add("empty workflow ID")
		}
		if rec.Gen == 0 {
			add("generation 0")
		}
		if rec.Origin > model.OriginRestart {
			add("unknown origin %d", uint8(rec.Origin))
		}
		if !rec.Parent.IsZero() && rec.ParentID == "" {
			add("a parent reference without the parent's workflow ID")
		}
	case model.KindChild, model.KindSend:
		if rec.WorkflowID == "" {
			add("empty target workflow ID")
		}
		if rec.MsgID == "" {
			add("empty message ID")
		}
		if rec.Kind == model.KindSend && rec.Attempt != model.SendSignal && rec.Attempt != model.SendCancel {
			add("unknown send flags %d", rec.Attempt)
		}
	case model.KindUpdate:
		if !rec.Parent.IsZero() && rec.ParentID == "" {
			add("a caller reference without the caller's workflow ID")
		}
	case model.KindAsync:
		if rec.Token.Run == 0 {
			add("no completion token")
		}
	case model.KindDone:
		if rec.Status == model.StatusNone {
			add("no status")
		}
	}
}

// runHeader checks the run entry against its Start and Done records.
func runHeader(addRun addRunFinding, r *model.Run, j []model.Record) {
	add := func(format string, args ...any) { addRun(KindRunHeader, format, args...) }
	if st := &j[0]; st.Kind == model.KindStart {
		if r.WorkflowID != st.WorkflowID {
			add("entry says workflow %q, start says %q", r.WorkflowID, st.WorkflowID)
		}
		if r.Gen != st.Gen {
			add("entry says generation %d, start says %d", r.Gen, st.Gen)
		}
		if r.Type != st.Type {
			add("entry says type %q, start says %q", r.Type, st.Type)
		}
		if r.Started != st.Time {
			add("entry says started at %d, start says %d", r.Started, st.Time)
		}
	}
	if d := &j[len(j)-1]; d.Kind == model.KindDone {
		if r.Status != d.Status || r.Finished != d.Time {
			add("entry says %s at %d, done says %s at %d", r.Status, r.Finished, d.Status, d.Time)
		}
	} else if r.Status != model.StatusNone || r.Finished != 0 {
		add("an unfinished run with status %s finished at %d", r.Status, r.Finished)
	}
}

// ownRefs checks what a record says of its own run: a step's key names
// this run, and an async's token is this run's, at its position, with
// the shard's store generation.
func ownRefs(add addRunFinding, p runPlace, r *model.Run, rec *model.Record) {
	switch rec.Kind {
	case model.KindStep:
		if k := rec.Key; k.WorkflowID != "" && (k.WorkflowID != r.WorkflowID || k.Run != r.No) {
			add(KindKey, "step at %d ran with key %s, this run's keys are %s", rec.Pos, k, r.Key(k.Pos))
		}
	case model.KindAsync:
		// A token carries the store generation that minted it, so one
		// minted before the store was rebuilt (a reshard) is refused.
		want := model.Token{Gen: model.TokenGen(p.storeGen), Shard: p.shard, Run: r.No, Pos: rec.Pos}
		if t := rec.Token; t.Run != 0 && t != want {
			add(KindToken, "async at %d has token %s (store generation %d mod 64, shard %d, run %d, position %d), want %s (store generation %d)",
				rec.Pos, t, t.Gen, t.Shard, t.Run, t.Pos, want, p.storeGen)
		}
	}
}

// startOrigin checks a Start record's origin against the parent and the
// predecessor it names.
func startOrigin(add addRunFinding, st *model.Record) {
	hasParent, hasPred := !st.Parent.IsZero(), !st.Pred.IsZero()
	switch st.Origin {
	case model.OriginChild:
		if !hasParent {
			add(KindOrigin, "origin child without a parent reference")
		}
	case model.OriginContinued, model.OriginReset, model.OriginRestart:
		if !hasPred {
			add(KindOrigin, "origin %s without a predecessor", st.Origin)
		}
		if st.Gen < 2 {
			add(KindOrigin, "origin %s in generation %d: a predecessor needs a generation before it", st.Origin, st.Gen)
		}
	}
	if hasParent && st.Origin != model.OriginChild {
		add(KindOrigin, "a parent reference with origin %s", st.Origin)
	}
	if hasPred && st.Origin != model.OriginContinued && st.Origin != model.OriginReset && st.Origin != model.OriginRestart {
		add(KindOrigin, "a predecessor with origin %s", st.Origin)
	}
}

// The rules of a reference once the run it names is found, whichever way
// it was found (a join, a map): the verifiers resolve, these judge.

// resolutionRule reports what resolving ref (what, in record rec) found
// when it is not a run: a shard that is not one of shards, a number
// its shard never handed out (it hands out numbers below nextRun), a run
// gone or the number that names none.
func resolutionRule(add addRunFinding, rec *model.Record, what string, ref model.RunRef, res resolution, shards int, nextRun model.RunNo) {
	switch res {
	case badShard:
		add(KindRefBadShard, "%s at %d: %s %s names shard %d of %d", rec.Kind, rec.Pos, what, ref, ref.Shard, shards)
	case unissued:
		add(KindRefUnissued, "%s at %d: %s %s, but shard %d's next run number is %d", rec.Kind, rec.Pos, what, ref, ref.Shard, nextRun)
	case dangling:
		add(KindRefDangling, "%s at %d: %s %s no longer exists", rec.Kind, rec.Pos, what, ref)
	case noSuchRun:
		add(KindRefDangling, "%s at %d: %s %s is the reserved number for no run: a reshard found the run it named gone",
			rec.Kind, rec.Pos, what, ref)
	}
}

// onIDsShard checks a reference (what, in record rec) that comes with
// its target's workflow ID id, to a shard that exists: it must be on the
// shard id lives on (of shards), and is then to be resolved.
func onIDsShard(add addRunFinding, shards int, rec *model.Record, what string, ref model.RunRef, id string) bool {
	if id == "" || ref.Run == model.NoSuchRun {
		return true
	}
	if want := model.ShardOf(id, shards); want != ref.Shard {
		add(KindRefWrongShard, "%s at %d: %s %s is on shard %d, but %q lives on shard %d", rec.Kind, rec.Pos, what, ref, ref.Shard, id, want)
		return false
	}
	return true
}

// predToFollow says whether a Start record's predecessor is to be
// resolved: it must be on the run's own shard (NoSuchRun names none).
func predToFollow(add addRunFinding, p runPlace, r *model.Run, st *model.Record) bool {
	if st.Pred.Shard != p.shard && st.Pred.Run != model.NoSuchRun {
		add(KindRefWrongShard, "predecessor %s is on another shard than its own workflow %q", st.Pred, r.WorkflowID)
		return false
	}
	return true
}

// nextToFollow checks a Done record's next run against its status and
// shard, and says whether it is to be resolved.
func nextToFollow(add addRunFinding, p runPlace, r *model.Run, d *model.Record) bool {
	starts := d.Status == model.StatusContinuedAsNew || d.Status == model.StatusReset
	switch {
	case starts && d.Next.IsZero():
		add(KindNext, "ended %s without naming the next run", d.Status)
	case !starts && !d.Next.IsZero():
		add(KindNext, "ended %s but names a next run %s", d.Status, d.Next)
	case d.Next.IsZero():
	case d.Next.Shard != p.shard && d.Next.Run != model.NoSuchRun:
		add(KindRefWrongShard, "next run %s is on another shard than its own workflow %q", d.Next, r.WorkflowID)
	default:
		return true
	}
	return false
}

// parentLands checks that a child's parent reference lands on the
// parent's Child record for this child: t is the parent, with the record
// at the reference's position.
func parentLands(addRun addRunFinding, r *model.Run, st *model.Record, t target) {
	add := func(format string, args ...any) { addRun(KindParent, format, args...) }
	if t.r.WorkflowID != st.ParentID {
		add("parent %s is a run of %q, the start says the parent is %q", st.Parent, t.r.WorkflowID, st.ParentID)
		return
	}
	if !t.hist {
		return // reported on the parent itself
	}
	switch c := t.rec; {
	case c == nil:
		add("parent %s: the parent's journal has %d records", st.Parent, t.n)
	case c.Kind != model.KindChild:
		add("parent %s is a %s record, not child", st.Parent, c.Kind)
	case c.WorkflowID != r.WorkflowID:
		add("parent %s requested a child %q, not %q", st.Parent, c.WorkflowID, r.WorkflowID)
	}
}

// callerIs checks that an Update record's caller, run c, is a run of the
// workflow ID the record names.
func callerIs(add addRunFinding, rec *model.Record, c *model.Run) {
	if c.WorkflowID != rec.ParentID {
		add(KindCaller, "update at %d names caller %s, a run of %q, but says the caller is %q",
			rec.Pos, rec.Parent, c.WorkflowID, rec.ParentID)
	}
}

// predecessorIs checks that Pred, run p, is the previous generation of
// this run's ID and ended the way the origin says.
func predecessorIs(addRun addRunFinding, r *model.Run, st *model.Record, p *model.Run) {
	add := func(format string, args ...any) { addRun(KindPred, format, args...) }
	if p.WorkflowID != r.WorkflowID || p.Gen+1 != r.Gen {
		add("predecessor %s is %q generation %d, want %q generation %d", st.Pred, p.WorkflowID, p.Gen, r.WorkflowID, r.Gen-1)
		return
	}
	var want model.Status
	switch st.Origin {
	case model.OriginContinued:
		want = model.StatusContinuedAsNew
	case model.OriginReset:
		want = model.StatusReset
	}
	switch {
	case p.State != model.StateFinished && p.State != model.StateTombstone:
		add("predecessor %s is %s, not finished", st.Pred, p.State)
	case want != model.StatusNone && p.Status != want:
		add("origin %s but predecessor %s ended %s", st.Origin, st.Pred, p.Status)
	}
}

// nextLands checks that a Done record's next run t is the next generation
// of the same workflow ID and, by its first record, names this run (on
// shard) its predecessor.
func nextLands(addRun addRunFinding, shard int, r *model.Run, d *model.Record, t target) {
	add := func(format string, args ...any) { addRun(KindNext, format, args...) }
	n := t.r
	if n.WorkflowID != r.WorkflowID || n.Gen != r.Gen+1 {
		add("next run %s is %q generation %d, want %q generation %d", d.Next, n.WorkflowID, n.Gen, r.WorkflowID, r.Gen+1)
		return
	}
	if first := t.rec; first != nil && first.Kind == model.KindStart {
		back := model.RunRef{Shard: shard, Run: r.No}
		if first.Pred != back {
			add("next run %s names predecessor %s, not this run", d.Next, first.Pred)
		}
	}
}

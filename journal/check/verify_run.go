package check

import (
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
)

// The rules of one run that need nothing but the run, its journal (or
// archived history) and where it is: its number, its shard, its state,
// the shape of its journal, the fields each record's kind requires, and
// its entry against its Start and Done records. The streaming verifier
// makes them as each run passes (verifier.runEntry); so does the
// whole-memory oracle of the tests (oracle_test.go), whose independence
// lies in how it loads and resolves, not in a copy of these rules. What
// needs more than one run (references, the ID index, timers, outbox and
// dedup) each makes in its own way.

// addRunFinding reports a finding about the run being checked.
type addRunFinding func(k Kind, format string, args ...any)

// runPlace is where a run is checked: its shard's index, the directory's
// shard count and the shard's next run number.
type runPlace struct {
	shard, shards int
	nextRun       model.RunNo
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
	journalShape(add, r, j)
	runHeader(add, r, j)
	return j
}

// journalShape checks positions, kinds, completions and where Done sits.
func journalShape(add addRunFinding, r *model.Run, j []model.Record) {
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

package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/wal"
)

// scenario is a small hand-written state that uses every kind of
// reference: a parent with a child on another shard, a continue-as-new
// chain, a signal with its sender, an update with its caller, an async
// token, step keys, a tombstone, a restarted ID, a parked run, pending
// timers and unacknowledged messages.
type scenario struct {
	w                   *world
	parent, kid, kid2   ident
	chain1, chain2      ident
	old, again1, again2 ident
	sleeper, neighbor   ident

	parentStep, parentChild uint32 // positions in parent
	kidStep, kidAsync       uint32
	updatePos               uint32 // in chain2
	sinkMsg, updateMsg      string // unacknowledged messages
	kid2Msg                 string
}

const scenarioShards = 4

// pickID returns the first of prefix-0, prefix-1, … for which keep holds.
func pickID(prefix string, keep func(shard int) bool) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if keep(model.ShardOf(id, scenarioShards)) {
			return id
		}
	}
}

func newScenario(t *testing.T) *scenario {
	w := newWorld(t, scenarioShards, 5)
	sc := &scenario{w: w}
	pshard := model.ShardOf("parent", scenarioShards)
	kid := pickID("kid", func(s int) bool { return s != pshard })
	neighbor := pickID("neighbor", func(s int) bool { return s == pshard })
	w.shards[pshard].NextRun += 3 // so that the parent's run number is not its generation

	sc.parent = w.start("parent", "P", model.OriginFresh, model.ParentRef{}, "", []byte("in"), 10)
	sc.neighbor = w.start(neighbor, "N", model.OriginFresh, model.ParentRef{}, "", nil, 11)
	sc.parentStep = w.step(sc.parent, "s1", []byte("out"))
	w.add(sc.parent, model.Record{Kind: model.KindTimer, Name: "nap", Time: 5000})
	sc.parentChild = uint32(len(w.run(sc.parent).Journal))
	w.deliver(w.child(sc.parent, kid, "K", []byte("kin")), true, 12)
	sc.kid = ident{kid, 1}
	sc.kidStep = w.step(sc.kid, "k1", nil)
	sc.kidAsync = w.async(sc.kid, "ext")
	w.add(sc.kid, model.Record{Kind: model.KindAsyncDone, Ref: sc.kidAsync, Payload: []byte("answer")})
	w.finish(sc.kid, model.StatusOK, 20, []byte("kout"))
	w.deliver(kid+"/1/r", true, 21)

	sc.chain1 = w.start("chain", "C", model.OriginFresh, model.ParentRef{}, "", nil, 30)
	w.step(sc.chain1, "c1", nil)
	sc.chain2 = w.continueAs(sc.chain1, model.StatusContinuedAsNew, 31, []byte("carry"))
	w.add(sc.chain2, model.Record{Kind: model.KindWait, Name: "go", Deadline: 9000})
	w.deliver(w.send(sc.parent, "chain", "go", false, []byte("sig")), true, 32)
	sc.updatePos = w.update(sc.chain2, "upd", "u-1", sc.parent, sc.parentStep, []byte("req"))
	w.add(sc.chain2, model.Record{Kind: model.KindUpdateDone, Ref: sc.updatePos, Attempt: 1, Status: model.StatusOK, Payload: []byte("res")})
	sc.updateMsg = fmt.Sprintf("chain/2/u%d", sc.updatePos)
	sc.sinkMsg = w.send(sc.parent, "sink", "ping", false, nil)

	sc.old = w.start("old", "O", model.OriginFresh, model.ParentRef{}, "", nil, 40)
	w.step(sc.old, "o1", nil)
	w.finish(sc.old, model.StatusFailed, 41, nil)
	w.op(sc.old, model.OpTombstone)

	sc.again1 = w.start("again", "A", model.OriginFresh, model.ParentRef{}, "", nil, 50)
	w.finish(sc.again1, model.StatusOK, 51, nil)
	sc.again2 = w.start("again", "A", model.OriginRestart, model.ParentRef{}, "", nil, 52)

	sc.sleeper = w.start("sleeper", "S", model.OriginFresh, model.ParentRef{}, "", nil, 60)
	w.add(sc.sleeper, model.Record{Kind: model.KindTimer, Name: "later", Time: 7000})
	w.op(sc.sleeper, model.OpPark)

	kid2 := pickID("kid2", func(int) bool { return true })
	sc.kid2Msg = w.child(sc.parent, kid2, "K", nil)
	sc.kid2 = ident{kid2, 1}
	return sc
}

func (sc *scenario) shardOf(x ident) *model.Shard { return sc.w.shard(x) }
func (sc *scenario) run(x ident) *model.Run       { return sc.w.run(x) }

// msg finds an outbox message by ID.
func (sc *scenario) msg(id string) (*model.Shard, *model.Message) {
	for _, s := range sc.w.shards {
		if m, ok := s.Outbox[id]; ok {
			return s, m
		}
	}
	panic("no message " + id)
}

// hole makes an unused run number below s's NextRun and returns it.
func hole(s *model.Shard) model.RunNo {
	no := s.NextRun
	s.NextRun++
	return no
}

func TestScenarioIsClean(t *testing.T) {
	sc := newScenario(t)
	if fs := Verify(sc.w.state()); len(fs) != 0 {
		t.Fatalf("the hand-built scenario has findings:\n%s", findingLines(fs))
	}
	if sc.shardOf(sc.parent).Index == sc.shardOf(sc.kid).Index {
		t.Fatal("the scenario wants the child on another shard than its parent")
	}
	if sc.run(sc.parent).No == model.RunNo(sc.parent.gen) {
		t.Fatal("the scenario wants the parent's run number to differ from its generation")
	}
}

// Random valid workloads have no findings at all.
func TestRandomStatesAreClean(t *testing.T) {
	for seed := uint64(100); seed < 120; seed++ {
		for _, w := range randomWorlds(t, seed, 300, 1, 5) {
			if fs := Verify(w.state()); len(fs) != 0 {
				t.Fatalf("seed %d, %d shards: findings on a valid state:\n%s", seed, w.n, findingLines(fs))
			}
		}
	}
}

func findingLines(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s [%s]\n", f, f.Severity)
	}
	return b.String()
}

// plant is one corruption and the finding it must produce.
type plant struct {
	name   string
	want   Kind
	mutate func(sc *scenario, st *State)
	// only: the findings must be exactly of this kind (no cascade).
	only bool
}

var plants = []plant{
	{"run moved to another shard", KindWrongShard, func(sc *scenario, st *State) {
		from := sc.shardOf(sc.old)
		to := sc.w.shards[(from.Index+1)%scenarioShards]
		r := sc.run(sc.old)
		delete(from.Runs, r.No)
		delete(from.ByID, r.WorkflowID)
		a := from.Archive[r.No]
		delete(from.Archive, r.No)
		r.No = hole(to)
		to.Runs[r.No], to.Archive[r.No], to.ByID[r.WorkflowID] = r, a, r.No
	}, false}, // its step's Ctx::key names the old number too
	{"run stored under another number", KindRunKeyMismatch, func(sc *scenario, st *State) {
		sc.run(sc.sleeper).No += 1000
	}, false},
	{"run number at NextRun", KindRunNumberUnissued, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.kid)
		s.NextRun = sc.run(sc.kid).No
	}, false},
	{"run number 0", KindRunNumberInvalid, func(sc *scenario, st *State) {
		s, r := sc.shardOf(sc.sleeper), sc.run(sc.sleeper)
		delete(s.Runs, r.No)
		r.No = 0
		s.Runs[0], s.ByID[r.WorkflowID] = r, 0
	}, false},
	{"NextRun 0", KindNextRunInvalid, func(sc *scenario, st *State) { sc.shardOf(sc.kid).NextRun = 0 }, false},
	{"checkpoint shard count", KindShardCount, func(sc *scenario, st *State) { sc.w.shards[2].Count = 8 }, true},
	{"meta shard count", KindShardCount, func(sc *scenario, st *State) { st.ShardCount = 5 }, false},
	{"shards swapped", KindShardIndex, func(sc *scenario, st *State) {
		st.Shards = slices.Clone(st.Shards)
		st.Shards[0], st.Shards[1] = st.Shards[1], st.Shards[0]
	}, false},
	{"checkpoint past the log", KindCheckpointLSN, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.Shards[1].CheckpointLSN = st.Recovery.Shards[1].LSN + 1
	}, true},
	{"recovery report disagrees", KindRecovery, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.Shards = st.Recovery.Shards[1:]
	}, true},
	{"torn tail", KindTornTail, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.TornTail = "wal/000003.log: 112 bytes after offset 4096"
	}, true},
	{"torn tail in detail", KindTornTail, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.LogEnding = wal.EndStopped
		st.Recovery.Torn = &wal.TornTail{File: "wal/000003.log", Offset: 4096, Bytes: 112, Reason: "damaged or incomplete record",
			Batch: 9, Sections: []wal.TornSection{{Shard: 1, FirstLSN: 40, Entries: 2}}}
		st.Recovery.TornTail = st.Recovery.Torn.String()
	}, true},
	{"log stopped", KindLogNotClosed, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.LogEnding = wal.EndStopped
	}, true},
	{"log closed without evidence", KindLogNotClosed, func(sc *scenario, st *State) {
		st.Recovery = cleanReport(st)
		st.Recovery.LogEnding = wal.EndUnproven
	}, true},
	{"unknown state", KindRunState, func(sc *scenario, st *State) { sc.run(sc.sleeper).State = 9 }, false},
	{"entry type differs from start", KindRunHeader, func(sc *scenario, st *State) { sc.run(sc.kid).Type = "other" }, true},
	{"entry status differs from done", KindRunHeader, func(sc *scenario, st *State) { sc.run(sc.kid).Status = model.StatusFailed }, true},
	{"finished run marked running", KindStateJournal, func(sc *scenario, st *State) {
		sc.run(sc.again1).State = model.StateRunning
	}, false},
	{"tombstone without archive", KindStateJournal, func(sc *scenario, st *State) {
		delete(sc.shardOf(sc.old).Archive, sc.run(sc.old).No)
	}, true},
	{"running run without records", KindJournalEmpty, func(sc *scenario, st *State) {
		sc.run(sc.neighbor).Journal = nil
	}, true},
	{"first record not start", KindJournalStart, func(sc *scenario, st *State) {
		sc.run(sc.neighbor).Journal[0].Kind = model.KindValue
	}, false},
	{"record at the wrong position", KindJournalPos, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[1].Pos = 7
	}, true},
	{"unknown record kind", KindJournalKind, func(sc *scenario, st *State) {
		sc.run(sc.chain2).Journal[1].Kind = 77
	}, false},
	{"done in the middle", KindJournalDone, func(sc *scenario, st *State) {
		r := sc.run(sc.kid)
		r.Journal[1] = model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusOK, Time: 20}
	}, false},
	{"completion of the wrong kind", KindCompletion, func(sc *scenario, st *State) {
		lastOf(sc.run(sc.parent), model.KindChildDone).Ref = sc.parentStep
	}, true},
	{"completion of a later position", KindCompletion, func(sc *scenario, st *State) {
		lastOf(sc.run(sc.kid), model.KindAsyncDone).Ref = 99
	}, true},
	{"two waits consume one signal", KindCompletion, func(sc *scenario, st *State) {
		w, sig := sc.w, lastOf(sc.run(sc.chain2), model.KindSignal).MsgID
		for range 2 {
			pos := w.add(sc.chain2, model.Record{Kind: model.KindWait, Name: "go"})
			w.add(sc.chain2, model.Record{Kind: model.KindWaited, Ref: pos, Status: model.StatusOK, MsgID: sig})
		}
	}, true},
	{"completed twice", KindCompletionDup, func(sc *scenario, st *State) {
		r := sc.run(sc.kid)
		dup := *lastOf(r, model.KindAsyncDone)
		done := r.Journal[len(r.Journal)-1]
		dup.Pos, done.Pos = done.Pos, done.Pos+1
		r.Journal = append(r.Journal[:len(r.Journal)-1], dup, done)
	}, true},
	{"child without message ID", KindRecordFields, func(sc *scenario, st *State) {
		sc.run(sc.parent).Journal[sc.parentChild].MsgID = ""
	}, true},
	{"archive of a live run", KindArchiveOrphan, func(sc *scenario, st *State) {
		sc.shardOf(sc.sleeper).Archive[sc.run(sc.sleeper).No] = sc.run(sc.sleeper).Journal
	}, true},
	{"index names a missing run", KindIndexMissingRun, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.sleeper)
		s.ByID["ghost"] = hole(s)
	}, true},
	{"index names a run of another ID", KindIndexWrongID, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.sleeper)
		s.ByID["ghost"] = sc.run(sc.sleeper).No
	}, true},
	{"index names an older generation", KindIndexNotLatest, func(sc *scenario, st *State) {
		sc.shardOf(sc.chain1).ByID["chain"] = sc.run(sc.chain1).No
	}, true},
	{"ID missing from the index", KindIndexMissingID, func(sc *scenario, st *State) {
		delete(sc.shardOf(sc.parent).ByID, "parent")
	}, true},
	{"two runs of one generation", KindGenDuplicate, func(sc *scenario, st *State) {
		r := sc.run(sc.again2)
		r.Gen, r.Journal[0].Gen = 1, 1
	}, false},
	{"a gap in the generations", KindGenGap, func(sc *scenario, st *State) {
		r := sc.run(sc.again2)
		r.Gen, r.Journal[0].Gen = 3, 3
	}, false},
	{"generations against run numbers", KindGenOrder, func(sc *scenario, st *State) {
		r1, r2 := sc.run(sc.again1), sc.run(sc.again2)
		r1.Gen, r1.Journal[0].Gen, r2.Gen, r2.Journal[0].Gen = 2, 2, 1, 1
	}, false},
	{"an older generation still live", KindSupersededActive, func(sc *scenario, st *State) {
		r := sc.run(sc.again1)
		r.State, r.Status, r.Finished = model.StateParked, model.StatusNone, 0
		r.Journal = r.Journal[:len(r.Journal)-1]
	}, false},
	{"parent on a shard that does not exist", KindRefBadShard, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[0].Parent.Shard = 9
	}, false},
	{"parent number never handed out", KindRefUnissued, func(sc *scenario, st *State) {
		st0 := &sc.run(sc.kid).Journal[0]
		st0.Parent.Run = sc.shardOf(sc.parent).NextRun + 5
	}, false},
	{"parent on the wrong shard", KindRefWrongShard, func(sc *scenario, st *State) {
		st0 := &sc.run(sc.kid).Journal[0]
		st0.Parent.Shard = (st0.Parent.Shard + 1) % scenarioShards
	}, false},
	{"sender gone", KindRefDangling, func(sc *scenario, st *State) {
		sig := lastOf(sc.run(sc.chain2), model.KindSignal)
		sig.By.Run = hole(sc.w.shards[sig.By.Shard])
	}, true},
	{"parent position not a child record", KindParent, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[0].Parent.Pos = sc.parentStep
	}, false},
	{"parent is a run of another ID", KindParent, func(sc *scenario, st *State) {
		p := &sc.run(sc.kid).Journal[0].Parent
		p.Run = sc.w.ref(sc.neighbor).Run
	}, false},
	{"child start with origin fresh", KindOrigin, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[0].Origin = model.OriginFresh
	}, true},
	{"continued without predecessor", KindOrigin, func(sc *scenario, st *State) {
		sc.run(sc.chain2).Journal[0].Pred = model.RunRef{}
	}, false},
	{"predecessor is not the previous generation", KindPred, func(sc *scenario, st *State) {
		sc.run(sc.again2).Journal[0].Pred = sc.w.ref(sc.again2)
	}, true},
	{"continued from a run that ended ok", KindPred, func(sc *scenario, st *State) {
		r := sc.run(sc.chain1)
		r.Status = model.StatusOK
		d := &r.Journal[len(r.Journal)-1]
		d.Status, d.Next = model.StatusOK, model.RunRef{}
	}, true},
	{"next run is not the next generation", KindNext, func(sc *scenario, st *State) {
		r := sc.run(sc.chain1)
		r.Journal[len(r.Journal)-1].Next = sc.w.ref(sc.chain1)
	}, true},
	{"continue-as-new without next", KindNext, func(sc *scenario, st *State) {
		r := sc.run(sc.chain1)
		r.Journal[len(r.Journal)-1].Next = model.RunRef{}
	}, true},
	{"key names another run", KindKey, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[sc.kidStep].Key.Run++
	}, true},
	{"token names another position", KindToken, func(sc *scenario, st *State) {
		sc.run(sc.kid).Journal[sc.kidAsync].Token.Pos++
	}, true},
	{"token minted before the store was rebuilt", KindToken, func(sc *scenario, st *State) {
		sc.shardOf(sc.kid).StoreGen++
	}, true},
	{"update caller is a run of another ID", KindCaller, func(sc *scenario, st *State) {
		u := &sc.run(sc.chain2).Journal[sc.updatePos]
		u.ParentID = sc.neighbor.id
		s, m := sc.msg(sc.updateMsg)
		_ = s
		m.Target, m.ParentID = sc.neighbor.id, sc.neighbor.id // keep the outbox consistent with the record
	}, true},
	{"timer missing", KindTimerMissing, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.sleeper)
		for k := range s.Timers {
			if k.Run == sc.run(sc.sleeper).No {
				delete(s.Timers, k)
			}
		}
	}, true},
	{"timer stale", KindTimerStale, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.kid)
		s.Timers[model.TimerKey{At: 1, Run: sc.run(sc.kid).No, Pos: 1}] = struct{}{}
	}, true},
	{"message under another key", KindOutboxKey, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		delete(s.Outbox, sc.sinkMsg)
		s.Outbox["other"] = m
	}, false},
	{"message of unknown kind", KindOutboxKind, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.sinkMsg)
		m.Kind = 9
	}, false},
	{"message without target", KindOutboxKind, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.sinkMsg)
		m.Target = ""
	}, false},
	{"message sequence not below NextSeq", KindOutboxSeq, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		m.Seq = s.NextSeq
	}, true},
	{"two messages share a sequence number", KindOutboxSeq, func(sc *scenario, st *State) {
		_, a := sc.msg(sc.sinkMsg)
		_, b := sc.msg(sc.kid2Msg)
		b.Seq = a.Seq
	}, true},
	{"message from a run that does not exist", KindOutboxFrom, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		m.From.Run = hole(s)
	}, true},
	{"result without parent", KindOutboxParent, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.updateMsg)
		m.Parent = model.ParentRef{}
	}, false},
	{"child start without the parent's workflow ID", KindOutboxParent, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.kid2Msg)
		m.ParentID = ""
	}, false}, // its source differs too
	{"child start naming another parent workflow", KindOutboxSource, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.kid2Msg)
		m.ParentID = sc.neighbor.id
	}, true},
	{"message sent at another time than its record", KindOutboxSource, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.sinkMsg)
		m.Sent++
	}, true},
	{"message differs from its record", KindOutboxSource, func(sc *scenario, st *State) {
		_, m := sc.msg(sc.kid2Msg)
		m.Payload = []byte("tampered")
	}, true},
	{"message no record produced", KindOutboxSource, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		c := *m
		c.ID, c.Seq = "parent/1/s999", s.NextSeq
		s.NextSeq++
		s.Outbox[c.ID] = &c
	}, true},
	{"one message in two outboxes", KindMsgIDDuplicate, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		other := sc.w.shards[(s.Index+1)%scenarioShards]
		c := *m
		c.Seq, c.From = other.NextSeq, model.RunRef{Shard: other.Index, Run: m.From.Run}
		other.NextSeq++
		other.Outbox[c.ID] = &c
	}, false},
	{"dedup entry on another shard than its workflow's", KindSeenWrongShard, func(sc *scenario, st *State) {
		// The kid's start was delivered to the kid; a reshard that copied
		// its dedup entry to the parent's shard instead lost it.
		from, to := sc.shardOf(sc.kid), sc.shardOf(sc.parent)
		id := sc.parent.id + fmt.Sprintf("/1/c%d", sc.parentChild)
		wf, ok := from.Seen[id]
		if !ok || wf != sc.kid.id {
			panic(fmt.Sprintf("the scenario has no dedup entry %q for %q on the kid's shard", id, sc.kid.id))
		}
		delete(from.Seen, id)
		to.Seen[id] = wf
	}, true},
	{"dedup entry without its workflow", KindSeenWrongShard, func(sc *scenario, st *State) {
		s := sc.shardOf(sc.chain2)
		for id := range s.Seen {
			s.Seen[id] = ""
		}
	}, true},
	{"message ID with a run number", KindMsgIDRunNumber, func(sc *scenario, st *State) {
		s, m := sc.msg(sc.sinkMsg)
		r := sc.run(sc.parent)
		id := fmt.Sprintf("parent/%d/s%d", r.No, m.Parent.Pos)
		for i := range r.Journal {
			if r.Journal[i].MsgID == sc.sinkMsg {
				r.Journal[i].MsgID = id
			}
		}
		delete(s.Outbox, sc.sinkMsg)
		m.ID = id
		s.Outbox[id] = m
	}, true},
}

// cleanReport is a recovery report that agrees with st.
func cleanReport(st *State) *journal.RecoveryReport {
	rep := &journal.RecoveryReport{}
	for _, s := range st.Shards {
		rep.Shards = append(rep.Shards, journal.ShardRecovery{Shard: s.Index, LSN: s.LSN})
	}
	return rep
}

func TestVerifyFindsPlantedDamage(t *testing.T) {
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			sc := newScenario(t)
			st := sc.w.state()
			p.mutate(sc, st)
			fs := Verify(st)
			found := false
			for _, f := range fs {
				if f.Kind == p.want {
					found = true
					if f.Severity != p.want.Severity() || f.Hint == "" || f.Detail == "" {
						t.Errorf("finding %+v: severity, hint or detail wrong", f)
					}
				} else if p.only {
					t.Errorf("unexpected %s finding: %s", f.Kind, f)
				}
			}
			if !found {
				t.Fatalf("no %s finding; got:\n%s", p.want, findingLines(fs))
			}
			t.Logf("findings:\n%s", findingLines(fs))
		})
	}
}

// Every finding kind has a planted-damage test, except those that need a
// directory on disk.
func TestEveryKindIsPlanted(t *testing.T) {
	planted := map[Kind]bool{KindUnreadable: true, KindExtraStore: true} // tested by the verify command; extra-store by TestExtraStoreFindings
	for _, p := range plants {
		planted[p.want] = true
	}
	for _, k := range Kinds() {
		if !planted[k] {
			t.Errorf("finding kind %s has no planted-damage test", k)
		}
		if k.Hint() == "" || k.Severity() == "" {
			t.Errorf("finding kind %s has no hint or severity", k)
		}
	}
}

// Verify does not change the state it checks.
func TestVerifyOnlyReads(t *testing.T) {
	w := randomWorlds(t, 77, 300, 3)[0]
	before := physDump(t, w)
	Verify(w.state())
	if after := physDump(t, w); after != before {
		t.Fatalf("Verify changed the state: %s", firstDiff(before, after))
	}
}

func physDump(t *testing.T, w *world) string {
	var b strings.Builder
	if err := WriteDump(&b, w.shards, DumpOptions{Physical: true}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A reshard may number an older run above a newer one that kept its
// number, and flags the run it renumbered: such an inversion is clean.
// The same inversion with neither run flagged is gen-order.
func TestGenOrderAllowsRenumbered(t *testing.T) {
	for _, flagged := range []bool{true, false} {
		sc := newScenario(t)
		s, old := sc.shardOf(sc.again1), sc.run(sc.again1)
		delete(s.Runs, old.No)
		old.No = hole(s) // above generation 2's number
		old.Renumbered = flagged
		s.Runs[old.No] = old
		sc.run(sc.again2).Journal[0].Pred.Run = old.No
		if sc.run(sc.again2).No > old.No {
			t.Fatal("the renumbered generation 1 is not above generation 2")
		}
		fs := Verify(sc.w.state())
		if flagged {
			if len(fs) != 0 {
				t.Errorf("an inversion with a renumbered run has findings:\n%s", findingLines(fs))
			}
			continue
		}
		if len(fs) != 1 || fs[0].Kind != KindGenOrder || fs[0].Run != old.No {
			t.Errorf("an inversion of two runs that kept their numbers: want one gen-order finding on run %d, got:\n%s",
				old.No, findingLines(fs))
		}
	}
}

// A reference a reshard rewrote to NoSuchRun is a known dangling
// reference: an info finding, never looked up as a run, whatever shard
// it names.
func TestNoSuchRunIsDangling(t *testing.T) {
	sc := newScenario(t)
	lastOf(sc.run(sc.chain2), model.KindSignal).By = model.RunRef{Shard: 0, Run: model.NoSuchRun}
	sc.run(sc.kid).Journal[0].Parent.Run = model.NoSuchRun
	sc.run(sc.again2).Journal[0].Pred = model.RunRef{Shard: 9, Run: model.NoSuchRun} // no shard 9 either
	fs := Verify(sc.w.state())
	if Problems(fs) != 0 || len(fs) != 3 {
		t.Fatalf("want 3 info findings, got:\n%s", findingLines(fs))
	}
	for _, f := range fs {
		if f.Kind != KindRefDangling || f.Severity != SeverityInfo || !strings.Contains(f.Detail, "reserved number for no run") {
			t.Errorf("finding %s: want an info ref-dangling naming the reserved number", f)
		}
	}
	var b strings.Builder
	if err := WriteLogicalDump(&b, sc.w.shards); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"pred":"dangling"`) || !strings.Contains(b.String(), `"by":"dangling"`) {
		t.Errorf("the dump does not render NoSuchRun references as dangling")
	}
}

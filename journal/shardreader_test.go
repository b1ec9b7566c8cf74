package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"
)

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// streamShard reads shard of the closed directory dir the streamed way
// (ReadHeader, the given tails, a ShardReader) into a *Shard, checking
// that every stream comes in order, so that it can be compared with
// RecoverShard's.
func streamShard(t fataler, fs vfs.FS, dir string, shard, count int, tail *ShardTail) (*Shard, error) {
	t.Helper()
	sr, err := OpenShardReader(fs, dir, shard, count, tail)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	s := NewShard(shard, count)
	h := sr.Header()
	s.LSN, s.NextRun, s.NextSeq = h.LSN, h.NextRun, h.NextSeq
	var last RunNo
	err = sr.Runs(context.Background(), func(r *Run, archive []Record) error {
		if r.No <= last {
			return fmt.Errorf("run %d after run %d", r.No, last)
		}
		last = r.No
		s.Runs[r.No] = r
		if archive != nil {
			s.Archive[r.No] = archive
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var lastSeq uint64
	err = sr.Outbox(func(m *Message) error {
		if m.Seq <= lastSeq {
			return fmt.Errorf("message seq %d after %d", m.Seq, lastSeq)
		}
		lastSeq = m.Seq
		if _, dup := s.Outbox[m.ID]; dup {
			return fmt.Errorf("message %q twice", m.ID)
		}
		s.Outbox[m.ID] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	lastID, first := "", true
	inOrder := func(id string) error {
		if !first && id <= lastID {
			return fmt.Errorf("%q after %q", id, lastID)
		}
		lastID, first = id, false
		return nil
	}
	if err := sr.Seen(func(id, wf string) error { s.Seen[id] = wf; return inOrder(id) }); err != nil {
		return nil, err
	}
	lastID, first = "", true
	if err := sr.Index(func(id string, no RunNo) error { s.ByID[id] = no; return inOrder(id) }); err != nil {
		return nil, err
	}
	var lastTimer *TimerKey
	err = sr.Timers(func(k TimerKey) error {
		if lastTimer != nil && compareTimers(*lastTimer, k) >= 0 {
			return fmt.Errorf("timer %+v after %+v", k, *lastTimer)
		}
		lastTimer = &k
		s.Timers[k] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, sr.Close()
}

// readAllTails reads every shard's header and the log tails.
func readAllTails(t fataler, fs vfs.FS, dir string, count int) ([]CheckpointHeader, []ShardTail, *RecoveryReport) {
	t.Helper()
	hdrs := make([]CheckpointHeader, count)
	for i := range hdrs {
		h, err := ReadHeader(fs, dir, i, count)
		if err != nil {
			t.Fatalf("ReadHeader(%d): %v", i, err)
		}
		hdrs[i] = h
	}
	tails, rep, err := ReadTails(context.Background(), fs, dir, hdrs)
	if err != nil {
		t.Fatalf("ReadTails: %v", err)
	}
	return hdrs, tails, rep
}

// checkStreamedEqualsRecovered compares, for every shard, the streamed
// state with RecoverShard's, and the tails' report with its report.
func checkStreamedEqualsRecovered(t fataler, fs vfs.FS, dir string, count int) []ShardTail {
	t.Helper()
	hdrs, tails, rep := readAllTails(t, fs, dir, count)
	for i := range count {
		want, wantHdr, wantRep, err := RecoverShard(fs, dir, i, count)
		if err != nil {
			t.Fatalf("RecoverShard(%d): %v", i, err)
		}
		if wantHdr != hdrs[i] {
			t.Fatalf("shard %d: ReadHeader %+v, RecoverShard's header %+v", i, hdrs[i], wantHdr)
		}
		if got := rep.Shards[i]; got.LSN != wantRep.LSN || got.Replayed != wantRep.Replayed || got.CheckpointLSN != wantRep.CheckpointLSN ||
			tails[i].LSN() != wantRep.LSN || len(tails[i].Entries) != wantRep.Replayed {
			t.Fatalf("shard %d: tail report %+v (%d entries), RecoverShard's %+v", i, got, len(tails[i].Entries), *wantRep)
		}
		got, err := streamShard(t, fs, dir, i, count, &tails[i])
		if err != nil {
			t.Fatalf("streaming shard %d: %v", i, err)
		}
		if d := DiffShards(got, want); d != "" {
			t.Fatalf("shard %d: streamed vs RecoverShard:\n%s", i, d)
		}
	}
	return tails
}

// tailCoverage counts what the random tails exercised.
type tailCoverage struct {
	starts, storeRunOps, parks, loads, tombstones, storeAcks, tailAcks, seen int
}

func (c *tailCoverage) count(t fataler, fs vfs.FS, dir string, tails []ShardTail) {
	for i := range tails {
		sr, err := OpenShardReader(fs, dir, i, len(tails), &tails[i])
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string]bool{}
		for _, e := range tails[i].Entries {
			switch op := e.Op; op.Kind {
			case OpStart:
				c.starts++
			case OpPark:
				c.parks++
			case OpLoad:
				c.loads++
			case OpTombstone:
				c.tombstones++
			case OpSeen:
				c.seen++
			case OpAck:
				if sent[op.MsgID] {
					c.tailAcks++
				} else {
					c.storeAcks++
				}
			case OpAppend:
				if op.Rec.MsgID != "" && (op.Rec.Kind == KindChild || op.Rec.Kind == KindSend) {
					sent[op.Rec.MsgID] = true
				}
			}
			if e.Op.Kind != OpStart && e.Op.Run != 0 && e.Op.Run < sr.stored.NextRun {
				c.storeRunOps++
			}
		}
		if err := sr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShardReaderEqualsRecoverShard is the oracle: for random directories
// (random workloads, random checkpoints, several batches committed after
// the last one), every shard streamed with ReadTails and a ShardReader
// equals RecoverShard's shard exactly, and ReadTails reports what
// RecoverShard replays.
func TestShardReaderEqualsRecoverShard(t *testing.T) {
	var cov tailCoverage
	rapid.Check(t, func(rt *rapid.T) {
		mem := vfs.NewMem()
		shards := rapid.IntRange(1, 3).Draw(rt, "shards")
		db, w := runWorkload(rt, mem, "/d", shards, rapid.IntRange(0, 50).Draw(rt, "batches"))
		if rapid.Bool().Draw(rt, "checkpoint") {
			if err := db.Checkpoint(); err != nil {
				rt.Fatal(err)
			}
		}
		for range rapid.IntRange(0, 12).Draw(rt, "tail") {
			if err := db.Commit(w.batch(rt, 6)); err != nil {
				rt.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			rt.Fatal(err)
		}
		tails := checkStreamedEqualsRecovered(rt, mem, "/d", shards)
		cov.count(rt, mem, "/d", tails)
	})
	t.Logf("tails exercised: %+v", cov)
	// Loads are rare in the workload (it loads only when no run is
	// running); TestShardReaderDirected loads a stored run.
	if cov.starts == 0 || cov.storeRunOps == 0 || cov.parks == 0 || cov.tombstones == 0 ||
		cov.storeAcks == 0 || cov.tailAcks == 0 || cov.seen == 0 {
		t.Fatalf("the random tails missed a case: %+v", cov)
	}
}

// TestShardReaderDirected builds, on the real disk, a checkpoint and then
// a tail that does each thing once: start a new ID and restart an ID whose
// run is in the store, append to a stored run (opening a timer and sending
// a message whose ID the store's outbox already has), park and load stored
// runs, finish and tombstone a stored run, ack a stored message and a
// message the tail sent, and add and overwrite dedup entries.
func TestShardReaderDirected(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 1, Now: 100})
	must(t, err)
	start := func(no RunNo, id string, gen uint32) ShardOp {
		return ShardOp{Op: Op{Kind: OpStart, Run: no, Rec: Record{Kind: KindStart, WorkflowID: id, Gen: gen, Type: "t", Time: 10}}}
	}
	app := func(no RunNo, rec Record) ShardOp { return ShardOp{Op: Op{Kind: OpAppend, Run: no, Rec: rec}} }
	send := func(no RunNo, pos uint32, msg string) ShardOp {
		return app(no, Record{Kind: KindSend, Pos: pos, WorkflowID: "peer", Name: "poke", MsgID: msg, Time: 20})
	}
	run := func(op Op) ShardOp { return ShardOp{Op: op} }
	must(t, db.Commit([]ShardOp{
		start(1, "a", 1), start(2, "b", 1), start(3, "c", 1), start(4, "d", 1), start(5, "e", 1),
		send(1, 1, "m1"), send(1, 2, "m2"), send(2, 1, "m3"),
		app(3, Record{Kind: KindDone, Pos: 1, Status: StatusOK, Time: 30}),
		app(5, Record{Kind: KindDone, Pos: 1, Status: StatusOK, Time: 30}), run(Op{Kind: OpTombstone, Run: 5}),
		app(4, Record{Kind: KindTimer, Pos: 1, Name: "sleep", Time: 500}), run(Op{Kind: OpPark, Run: 4}),
		run(Op{Kind: OpSeen, MsgID: "in-1", WorkflowID: "a"}), run(Op{Kind: OpSeen, MsgID: "in-2", WorkflowID: "b"}),
	}))
	must(t, db.Checkpoint())
	must(t, db.Commit([]ShardOp{
		start(6, "new", 1), // a new ID
		start(7, "c", 2),   // a restart of an ID whose run is in the store
		send(2, 2, "m1"),   // replaces the store's m1
		app(2, Record{Kind: KindTimer, Pos: 3, Name: "sleep", Time: 900}),
		run(Op{Kind: OpAck, MsgID: "m2"}), // a stored message
		send(6, 1, "m9"),                  // sent by the tail…
		run(Op{Kind: OpAck, MsgID: "m9"}), // …and acked in it
		send(6, 2, "m10"),
		run(Op{Kind: OpPark, Run: 1}), run(Op{Kind: OpLoad, Run: 4}),
		run(Op{Kind: OpTombstone, Run: 3}),
		run(Op{Kind: OpSeen, MsgID: "in-2", WorkflowID: "c"}), run(Op{Kind: OpSeen, MsgID: "in-0", WorkflowID: "a"}),
	}))
	must(t, db.Close())
	tails := checkStreamedEqualsRecovered(t, vfs.Default, dir, 1)
	if n := len(tails[0].Entries); n != 13 {
		t.Fatalf("tail of %d entries, want 13", n)
	}
	got, err := streamShard(t, vfs.Default, dir, 0, 1, &tails[0])
	must(t, err)
	if len(got.Outbox) != 3 || got.Outbox["m1"].Seq != 4 || got.Outbox["m3"].Seq != 3 || got.ByID["c"] != 7 || got.Seen["in-2"] != "c" {
		t.Fatalf("streamed outbox %v, index %v, seen %v", got.SortedOutbox(), got.ByID, got.Seen)
	}
}

// TestShardReaderRefusesDamage: a store that contradicts itself where the
// reader looks is a *StoreError naming the store, and a tail entry that
// does not fit is a *LogError, as in recovery.
func TestShardReaderRefusesDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, db *pebble.DB)
		want   string
	}{
		{"missing journal record", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(RecordKey(2, 1), pebble.Sync)) }, "key run/2"},
		{"undecodable run entry", func(t *testing.T, db *pebble.DB) { must(t, db.Set(RunKey(2), []byte{9}, pebble.Sync)) }, "key run/2"},
		{"run past next run", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(RunKey(9), EncodeRunEntry(nil, &RunEntry{State: StateTombstone, WorkflowID: "z"}), pebble.Sync))
			must(t, db.Set(ArchiveKey(9), EncodeHistory(nil, nil), pebble.Sync))
		}, "next run number"},
		{"archive of a live run", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(ArchiveKey(2), EncodeHistory(nil, nil), pebble.Sync))
		}, "not a tombstone"},
		{"tombstone without archive", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(ArchiveKey(3), pebble.Sync)) }, "no archived history"},
		{"outbox seq past next seq", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(OutboxKey(99), EncodeMessage(nil, &Message{ID: "x", Kind: MsgSignal, Target: "p"}), pebble.Sync))
		}, "next seq"},
		{"unknown key", func(t *testing.T, db *pebble.DB) { must(t, db.Set([]byte("Zebra"), nil, pebble.Sync)) }, "unknown kind"},
		{"acked message missing", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(OutboxKey(1), pebble.Sync)) }, "not in the outbox"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			db, err := Create(mem, "/d", CreateOptions{Shards: 1})
			must(t, err)
			must(t, db.Commit([]ShardOp{
				{Op: Op{Kind: OpStart, Run: 1, Rec: Record{Kind: KindStart, WorkflowID: "a", Gen: 1}}},
				{Op: Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindSend, Pos: 1, WorkflowID: "p", MsgID: "m1"}}},
				{Op: Op{Kind: OpStart, Run: 2, Rec: Record{Kind: KindStart, WorkflowID: "b", Gen: 1}}},
				{Op: Op{Kind: OpAppend, Run: 2, Rec: Record{Kind: KindValue, Pos: 1}}},
				{Op: Op{Kind: OpStart, Run: 3, Rec: Record{Kind: KindStart, WorkflowID: "c", Gen: 1}}},
				{Op: Op{Kind: OpAppend, Run: 3, Rec: Record{Kind: KindDone, Pos: 1}}},
				{Op: Op{Kind: OpTombstone, Run: 3}},
			}))
			must(t, db.Checkpoint())
			must(t, db.Commit([]ShardOp{{Op: Op{Kind: OpAck, MsgID: "m1"}}}))
			must(t, db.Close())
			st, err := openStore(mem, StoreDir(mem, "/d", 0), nil, false, false)
			must(t, err)
			tc.damage(t, st)
			must(t, st.Close())

			_, tails, _ := readAllTails(t, mem, "/d", 1)
			_, err = streamShard(t, mem, "/d", 0, 1, &tails[0])
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "restore") {
				t.Fatalf("streaming a damaged shard: %v; want an error saying %q and what to do", err, tc.want)
			}
			var se *StoreError
			var le *LogError
			if !errors.As(err, &se) && !errors.As(err, &le) {
				t.Fatalf("error %v: want a *StoreError or *LogError", err)
			}
		})
	}
}

// TestReadTailsRefusesDisagreement: a checkpoint header ahead of the log
// is refused by ReadTails as by recovery.
func TestReadTailsRefusesDisagreement(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Create(mem, "/d", CreateOptions{Shards: 2})
	must(t, err)
	must(t, db.Commit([]ShardOp{{Shard: 1, Op: Op{Kind: OpSeen, MsgID: "x", WorkflowID: "a"}}}))
	must(t, db.Close())
	hdrs, _, _ := readAllTails(t, mem, "/d", 2)
	hdrs[1].LSN = 3
	if _, _, err := ReadTails(context.Background(), mem, "/d", hdrs); err == nil || !strings.Contains(err.Error(), "checkpoint and log disagree") {
		t.Fatalf("ReadTails with a header ahead of the log: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hdrs[1].LSN = 0
	if _, _, err := ReadTails(ctx, mem, "/d", hdrs); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadTails after cancel: %v", err)
	}
}

// TestRunEntriesMatchesRuns: the entries-only stream names the same runs,
// in the same order, with the same entries, as the full one, with random
// log tails over the store.
func TestRunEntriesMatchesRuns(t *testing.T) {
	type pair struct {
		no RunNo
		e  RunEntry
	}
	rapid.Check(t, func(rt *rapid.T) {
		mem := vfs.NewMem()
		shards := rapid.IntRange(1, 3).Draw(rt, "shards")
		db, w := runWorkload(rt, mem, "/d", shards, rapid.IntRange(0, 40).Draw(rt, "batches"))
		if err := db.Checkpoint(); err != nil {
			rt.Fatal(err)
		}
		for range rapid.IntRange(0, 10).Draw(rt, "tail") {
			if err := db.Commit(w.batch(rt, 6)); err != nil {
				rt.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			rt.Fatal(err)
		}
		_, tails, _ := readAllTails(rt, mem, "/d", shards)
		for i := range shards {
			sr, err := OpenShardReader(mem, "/d", i, shards, &tails[i])
			if err != nil {
				rt.Fatal(err)
			}
			var full, entries []pair
			err = sr.Runs(context.Background(), func(r *Run, _ []Record) error {
				full = append(full, pair{r.No, entryOf(r)})
				return nil
			})
			if err == nil {
				err = sr.RunEntries(context.Background(), func(no RunNo, e RunEntry) error {
					entries = append(entries, pair{no, e})
					return nil
				})
			}
			sr.Close()
			if err != nil {
				rt.Fatal(err)
			}
			if fmt.Sprint(full) != fmt.Sprint(entries) {
				rt.Fatalf("shard %d: RunEntries gave %d runs, Runs %d:\n%v\n%v", i, len(entries), len(full), entries, full)
			}
		}
	})
}

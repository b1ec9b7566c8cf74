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
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
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
func streamShard(t fataler, fs vfs.FS, dir string, shard, count int, tail *store.ShardTail) (*model.Shard, error) {
	t.Helper()
	sr, err := store.OpenShardReader(fs, dir, shard, count, tail)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	s := model.NewShard(shard, count)
	h := sr.Header()
	s.LSN, s.NextRun, s.NextSeq = h.LSN, h.NextRun, h.NextSeq
	var last model.RunNo
	err = sr.Runs(context.Background(), func(r *model.Run, archive []model.Record) error {
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
	err = sr.Outbox(func(m *model.Message) error {
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
	if err := sr.Index(func(id string, no model.RunNo) error { s.ByID[id] = no; return inOrder(id) }); err != nil {
		return nil, err
	}
	var lastTimer *model.TimerKey
	err = sr.Timers(func(k model.TimerKey) error {
		if lastTimer != nil && model.CompareTimers(*lastTimer, k) >= 0 {
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
func readAllTails(t fataler, fs vfs.FS, dir string, count int) ([]model.CheckpointHeader, []store.ShardTail, *RecoveryReport) {
	t.Helper()
	hdrs := make([]model.CheckpointHeader, count)
	for i := range hdrs {
		h, err := store.ReadHeader(fs, dir, i, count)
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
func checkStreamedEqualsRecovered(t fataler, fs vfs.FS, dir string, count int) []store.ShardTail {
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
		if d := model.DiffShards(got, want); d != "" {
			t.Fatalf("shard %d: streamed vs RecoverShard:\n%s", i, d)
		}
	}
	return tails
}

// tailCoverage counts what the random tails exercised.
type tailCoverage struct {
	starts, storeRunOps, parks, loads, tombstones, storeAcks, tailAcks, seen int
}

func (c *tailCoverage) count(t fataler, fs vfs.FS, dir string, tails []store.ShardTail) {
	for i := range tails {
		sr, err := store.OpenShardReader(fs, dir, i, len(tails), &tails[i])
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string]bool{}
		for _, e := range tails[i].Entries {
			switch op := e.Op; op.Kind {
			case model.OpStart:
				c.starts++
			case model.OpPark:
				c.parks++
			case model.OpLoad:
				c.loads++
			case model.OpTombstone:
				c.tombstones++
			case model.OpSeen:
				c.seen++
			case model.OpAck:
				if sent[op.MsgID] {
					c.tailAcks++
				} else {
					c.storeAcks++
				}
			case model.OpAppend:
				if op.Rec.MsgID != "" && (op.Rec.Kind == model.KindChild || op.Rec.Kind == model.KindSend) {
					sent[op.Rec.MsgID] = true
				}
			}
			if e.Op.Kind != model.OpStart && e.Op.Run != 0 && e.Op.Run < sr.StoredHeader().NextRun {
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
	// The coverage below is a property of the generator, not of one
	// seed: a round of a few dozen random directories now and then acks
	// no stored message (CI's run at 9080791: storeAcks 0, tailAcks 2
	// in 30). So a round that misses a case is followed by another, with
	// a new seed, up to five; every round is checked against the oracle
	// in full, and five rounds that together miss a case fail.
	var cov tailCoverage
	for round := 0; round < 5 && (round == 0 || !cov.complete()); round++ {
		checkShardReaderRound(t, &cov)
	}
	t.Logf("tails exercised: %+v", cov)
	if !cov.complete() {
		t.Fatalf("the random tails missed a case in five rounds: %+v", cov)
	}
}

// complete says whether the tails exercised every case. Loads are rare
// in the workload (it loads only when no run is running), so they are
// not required; TestShardReaderDirected loads a stored run.
func (c *tailCoverage) complete() bool {
	return c.starts > 0 && c.storeRunOps > 0 && c.parks > 0 && c.tombstones > 0 &&
		c.storeAcks > 0 && c.tailAcks > 0 && c.seen > 0
}

// checkShardReaderRound is one rapid round of
// TestShardReaderEqualsRecoverShard, adding what it exercised to cov.
func checkShardReaderRound(t *testing.T, cov *tailCoverage) {
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
	start := func(no model.RunNo, id string, gen uint32) ShardOp {
		return ShardOp{Op: model.Op{Kind: model.OpStart, Run: no, Rec: model.Record{Kind: model.KindStart, WorkflowID: id, Gen: gen, Type: "t", Time: 10}}}
	}
	app := func(no model.RunNo, rec model.Record) ShardOp {
		return ShardOp{Op: model.Op{Kind: model.OpAppend, Run: no, Rec: rec}}
	}
	send := func(no model.RunNo, pos uint32, msg string) ShardOp {
		return app(no, model.Record{Kind: model.KindSend, Pos: pos, WorkflowID: "peer", Name: "poke", MsgID: msg, Time: 20})
	}
	run := func(op model.Op) ShardOp { return ShardOp{Op: op} }
	must(t, db.Commit([]ShardOp{
		start(1, "a", 1), start(2, "b", 1), start(3, "c", 1), start(4, "d", 1), start(5, "e", 1),
		send(1, 1, "m1"), send(1, 2, "m2"), send(2, 1, "m3"),
		app(3, model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusOK, Time: 30}),
		app(5, model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusOK, Time: 30}), run(model.Op{Kind: model.OpTombstone, Run: 5}),
		app(4, model.Record{Kind: model.KindTimer, Pos: 1, Name: "sleep", Time: 500}), run(model.Op{Kind: model.OpPark, Run: 4}),
		run(model.Op{Kind: model.OpSeen, MsgID: "in-1", WorkflowID: "a"}), run(model.Op{Kind: model.OpSeen, MsgID: "in-2", WorkflowID: "b"}),
	}))
	must(t, db.Checkpoint())
	must(t, db.Commit([]ShardOp{
		start(6, "new", 1), // a new ID
		start(7, "c", 2),   // a restart of an ID whose run is in the store
		send(2, 2, "m1"),   // replaces the store's m1
		app(2, model.Record{Kind: model.KindTimer, Pos: 3, Name: "sleep", Time: 900}),
		run(model.Op{Kind: model.OpAck, MsgID: "m2"}), // a stored message
		send(6, 1, "m9"), // sent by the tail…
		run(model.Op{Kind: model.OpAck, MsgID: "m9"}), // …and acked in it
		send(6, 2, "m10"),
		run(model.Op{Kind: model.OpPark, Run: 1}), run(model.Op{Kind: model.OpLoad, Run: 4}),
		run(model.Op{Kind: model.OpTombstone, Run: 3}),
		run(model.Op{Kind: model.OpSeen, MsgID: "in-2", WorkflowID: "c"}), run(model.Op{Kind: model.OpSeen, MsgID: "in-0", WorkflowID: "a"}),
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
		{"missing journal record", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(store.RecordKey(2, 1), pebble.Sync)) }, "key run/2"},
		{"undecodable run entry", func(t *testing.T, db *pebble.DB) { must(t, db.Set(store.RunKey(2), []byte{9}, pebble.Sync)) }, "key run/2"},
		{"run past next run", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(store.RunKey(9), model.EncodeRunEntry(nil, &model.RunEntry{State: model.StateTombstone, WorkflowID: "z"}), pebble.Sync))
			must(t, db.Set(store.ArchiveKey(9), model.EncodeHistory(nil, nil), pebble.Sync))
		}, "next run number"},
		{"archive of a live run", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(store.ArchiveKey(2), model.EncodeHistory(nil, nil), pebble.Sync))
		}, "not a tombstone"},
		{"tombstone without archive", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(store.ArchiveKey(3), pebble.Sync)) }, "no archived history"},
		{"outbox seq past next seq", func(t *testing.T, db *pebble.DB) {
			must(t, db.Set(store.OutboxKey(99), model.EncodeMessage(nil, &model.Message{ID: "x", Kind: model.MsgSignal, Target: "p"}), pebble.Sync))
		}, "next seq"},
		{"unknown key", func(t *testing.T, db *pebble.DB) { must(t, db.Set([]byte("Zebra"), nil, pebble.Sync)) }, "unknown kind"},
		{"acked message missing", func(t *testing.T, db *pebble.DB) { must(t, db.Delete(store.OutboxKey(1), pebble.Sync)) }, "not in the outbox"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			db, err := Create(mem, "/d", CreateOptions{Shards: 1})
			must(t, err)
			must(t, db.Commit([]ShardOp{
				{Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1}}},
				{Op: model.Op{Kind: model.OpAppend, Run: 1, Rec: model.Record{Kind: model.KindSend, Pos: 1, WorkflowID: "p", MsgID: "m1"}}},
				{Op: model.Op{Kind: model.OpStart, Run: 2, Rec: model.Record{Kind: model.KindStart, WorkflowID: "b", Gen: 1}}},
				{Op: model.Op{Kind: model.OpAppend, Run: 2, Rec: model.Record{Kind: model.KindValue, Pos: 1}}},
				{Op: model.Op{Kind: model.OpStart, Run: 3, Rec: model.Record{Kind: model.KindStart, WorkflowID: "c", Gen: 1}}},
				{Op: model.Op{Kind: model.OpAppend, Run: 3, Rec: model.Record{Kind: model.KindDone, Pos: 1}}},
				{Op: model.Op{Kind: model.OpTombstone, Run: 3}},
			}))
			must(t, db.Checkpoint())
			must(t, db.Commit([]ShardOp{{Op: model.Op{Kind: model.OpAck, MsgID: "m1"}}}))
			must(t, db.Close())
			st, err := store.OpenStore(mem, store.StoreDir(mem, "/d", 0), nil, false, false)
			must(t, err)
			tc.damage(t, st)
			must(t, st.Close())

			_, tails, _ := readAllTails(t, mem, "/d", 1)
			_, err = streamShard(t, mem, "/d", 0, 1, &tails[0])
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "restore") {
				t.Fatalf("streaming a damaged shard: %v; want an error saying %q and what to do", err, tc.want)
			}
			var se *store.StoreError
			var le *store.LogError
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
	must(t, db.Commit([]ShardOp{{Shard: 1, Op: model.Op{Kind: model.OpSeen, MsgID: "x", WorkflowID: "a"}}}))
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
		no model.RunNo
		e  model.RunEntry
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
			sr, err := store.OpenShardReader(mem, "/d", i, shards, &tails[i])
			if err != nil {
				rt.Fatal(err)
			}
			var full, entries []pair
			err = sr.Runs(context.Background(), func(r *model.Run, _ []model.Record) error {
				full = append(full, pair{r.No, model.EntryOf(r)})
				return nil
			})
			if err == nil {
				err = sr.RunEntries(context.Background(), func(no model.RunNo, e model.RunEntry) error {
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

package reshard_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/reshard"
)

// idOn returns a workflow ID with the prefix that lives on shard among n.
func idOn(t testing.TB, prefix string, shard, n int) string {
	for i := 0; i < 100000; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if model.ShardOf(id, n) == shard {
			return id
		}
	}
	t.Fatalf("no ID for shard %d of %d", shard, n)
	return ""
}

type handRun struct {
	shard    int
	no       model.RunNo
	wf       string
	gen      uint32
	finished bool
	pred     model.RunRef
	by       model.RunRef // a signal from this run (may name no run: dangling)
}

// handDir builds a directory of n shards holding exactly the given runs.
func handDir(t testing.TB, n int, runs []handRun) string {
	t.Helper()
	shards := make([]*model.Shard, n)
	for i := range shards {
		shards[i] = model.NewShard(i, n)
	}
	for _, r := range runs {
		s := shards[r.shard]
		s.NextRun = r.no
		start := model.Record{Kind: model.KindStart, WorkflowID: r.wf, Type: "hand", Time: 1000, Gen: r.gen}
		if !r.pred.IsZero() {
			start.Origin, start.Pred = model.OriginRestart, r.pred
		}
		apply := func(op model.Op) {
			if err := s.Apply(&op); err != nil {
				t.Fatalf("building run %s#%d: %v", r.wf, r.gen, err)
			}
		}
		apply(model.Op{Kind: model.OpStart, Run: r.no, Rec: start})
		pos := uint32(1)
		if !r.by.IsZero() {
			apply(model.Op{Kind: model.OpAppend, Run: r.no, Rec: model.Record{Kind: model.KindSignal, Pos: pos, Time: 1100,
				Name: "poke", MsgID: fmt.Sprintf("sig-%s-%d", r.wf, r.gen), By: r.by}})
			pos++
		}
		if r.finished {
			apply(model.Op{Kind: model.OpAppend, Run: r.no, Rec: model.Record{Kind: model.KindDone, Pos: pos, Time: 2000, Status: model.StatusOK}})
		}
	}
	dir := filepath.Join(t.TempDir(), "data")
	db, err := journal.CreateFrom(vfs.Default, dir, shards, journal.CreateOptions{Now: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadShards(t testing.TB, dir string) []*model.Shard {
	t.Helper()
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.Shards
}

// TestRenumberingRules pins each rule on a directory built by hand (two
// shards merged into one):
//
//	number 1: a (running, old shard 0) and x#1 (finished, old shard 1):
//	          the unfinished run keeps it;
//	number 2: b (finished, shard 0) and x#2 (running, shard 1): again;
//	number 3: c (running, shard 0) and y (running, shard 1): both
//	          unfinished, the lower old shard keeps it;
//	losers x#1, b, y (all generation 1) are numbered from 4 (above every
//	number used, 3) in the order generation, old number, old shard.
//
// x#1 (older) now has a higher number than x#2 (newer): the ID index must
// still name x#2, the highest generation. a's signal names a run that
// does not exist: it becomes the reserved number and is counted.
func TestRenumberingRules(t *testing.T) {
	a, b, c := idOn(t, "a", 0, 2), idOn(t, "b", 0, 2), idOn(t, "c", 0, 2)
	x, y := idOn(t, "x", 1, 2), idOn(t, "y", 1, 2)
	dir := handDir(t, 2, []handRun{
		{shard: 0, no: 1, wf: a, gen: 1, by: model.RunRef{Shard: 1, Run: 99}},
		{shard: 0, no: 2, wf: b, gen: 1, finished: true},
		{shard: 0, no: 3, wf: c, gen: 1},
		{shard: 1, no: 1, wf: x, gen: 1, finished: true},
		{shard: 1, no: 2, wf: x, gen: 2, pred: model.RunRef{Shard: 1, Run: 1}},
		{shard: 1, no: 3, wf: y, gen: 1},
	})
	rep := doReshard(t, dir, 1, reshard.Options{})
	s := loadShards(t, dir)[0]
	want := map[string]model.RunNo{a + "#1": 1, x + "#2": 2, c + "#1": 3, x + "#1": 4, b + "#1": 5, y + "#1": 6}
	for _, r := range s.Runs {
		key := fmt.Sprintf("%s#%d", r.WorkflowID, r.Gen)
		if want[key] != r.No {
			t.Errorf("%s got number %d, want %d", key, r.No, want[key])
		}
		if renum := r.No >= 4; r.Renumbered != renum {
			t.Errorf("%s renumbered flag %v, want %v", key, r.Renumbered, renum)
		}
	}
	if len(s.Runs) != len(want) {
		t.Errorf("%d runs, want %d", len(s.Runs), len(want))
	}
	if s.ByID[x] != 2 {
		t.Errorf("the ID index names run %d for %s, want 2 (generation 2, although generation 1 is now run 4)", s.ByID[x], x)
	}
	if p := s.Runs[2].Journal[0].Pred; p != (model.RunRef{Shard: 0, Run: 4}) {
		t.Errorf("x#2's predecessor is %v, want 0:4", p)
	}
	if by := s.Runs[1].Journal[1].By; by.Run != model.NoSuchRun {
		t.Errorf("a's dangling sender became %v, want the reserved number %d", by, model.NoSuchRun)
	}
	if rep.Counts.DanglingRefs != 1 {
		t.Errorf("dangling references counted %d, want 1", rep.Counts.DanglingRefs)
	}
	if s.NextRun != 7 {
		t.Errorf("next run %d, want 7", s.NextRun)
	}
	// Unfinished renumbered: only y (x#1 and b are finished).
	if ren := rep.Renumbered.All(); len(ren) != 1 || ren[0].WorkflowID != y || ren[0].NewRun != 6 ||
		ren[0].OldKey != y+"/3/" || ren[0].NewKey != y+"/6/" {
		t.Errorf("renumbered unfinished runs: %+v, want only %s 3 -> 6", ren, y)
	}
}

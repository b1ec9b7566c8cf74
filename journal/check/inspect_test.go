package check

import (
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
)

func TestInspectCountsTheScenario(t *testing.T) {
	sc := newScenario(t)
	sum := Inspect(sc.w.state())
	tot := sum.Total
	// parent, neighbor, kid, chain#1, chain#2, old, again#1, again#2, sleeper
	if tot.Runs != 9 || tot.Running != 4 || tot.Parked != 1 || tot.Finished != 3 || tot.Tombstone != 1 {
		t.Errorf("runs by state: %+v", tot)
	}
	if tot.Outbox != 3 || tot.Archives != 1 || tot.ArchiveRecords != 3 || tot.Timers != 3 {
		t.Errorf("outbox %d (want 3: the sink signal, the update result, kid2's start), archives %d/%d records, timers %d (want 3)",
			tot.Outbox, tot.Archives, tot.ArchiveRecords, tot.Timers)
	}
	if tot.Seen != 3 { // the kid's start, its result, the signal to chain
		t.Errorf("dedup entries: %d, want 3", tot.Seen)
	}
	if len(sum.Shards) != scenarioShards || sum.ShardCount != scenarioShards {
		t.Errorf("%d shard summaries for %d shards", len(sum.Shards), sum.ShardCount)
	}
	// Sizes a state built in memory cannot know are -1, in totals too.
	if tot.TailEntries != -1 || tot.TailBytes != -1 || tot.StoreBytes != -1 || sum.LogBytes != -1 {
		t.Errorf("unknown sizes: %+v, log %d", tot, sum.LogBytes)
	}
	if o := sum.Oldest; o == nil || o.WorkflowID != "parent" || o.Gen != 1 || o.Run != sc.w.ref(sc.parent).Run {
		t.Errorf("oldest run: %+v", o)
	}
	if n := sum.Newest; n == nil || n.WorkflowID != "sleeper" {
		t.Errorf("newest run: %+v", n)
	}
}

// Runs that started at the same time are ordered by ID and generation, so
// oldest and newest do not depend on map order or run numbers.
func TestInspectOldestNewestTies(t *testing.T) {
	w := newWorld(t, 2, 0)
	for _, id := range []string{"m", "b", "z", "a"} {
		w.start(id, "T", model.OriginFresh, model.ParentRef{}, "", nil, 7)
	}
	sum := Inspect(w.state())
	if sum.Oldest.WorkflowID != "a" || sum.Newest.WorkflowID != "z" {
		t.Fatalf("oldest %s, newest %s; want a and z", sum.Oldest.WorkflowID, sum.Newest.WorkflowID)
	}
	if empty := Inspect(FromShards([]*model.Shard{model.NewShard(0, 1)})); empty.Oldest != nil || empty.Newest != nil {
		t.Fatal("an empty directory has an oldest run")
	}
}

func TestFindingText(t *testing.T) {
	f := Finding{Kind: KindWrongShard, Severity: SeverityError, Shard: 3, Run: 17, Detail: "d", Hint: "h"}
	if got := f.String(); got != "shard 3 run 17: wrong-shard: d (h)" {
		t.Errorf("%q", got)
	}
	f.Run = 0
	if got := f.String(); got != "shard 3: wrong-shard: d (h)" {
		t.Errorf("%q", got)
	}
	f.Shard = -1
	if got := f.String(); got != "directory: wrong-shard: d (h)" {
		t.Errorf("%q", got)
	}
}

package ringfile

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestOpenEpochDrainsThePreviousAndKeepsItsRing(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA")
	if p.Current != 0 || p.Revision != 1 || p.Epoch(0).Status != StatusOpen {
		t.Fatalf("genesis: %+v", p)
	}
	split := Ring{{Shard: 0, Cell: "cellA"}, {Shard: 1, Cell: "cellA"}, {Shard: 2, Cell: "cellB"}, {Shard: 3, Cell: "cellB"}}
	next, err := OpenEpoch(p, split, ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	if next.Current != 1 || next.Revision != 2 {
		t.Errorf("current %d revision %d", next.Current, next.Revision)
	}
	if e0 := next.Epoch(0); e0.Status != StatusDraining || !e0.Ring.SamePlacement(EvenRing(4, []string{"cellA"})) {
		t.Errorf("epoch 0 after open: %+v", e0)
	}
	if !next.IsDeclared("cellB") {
		t.Error("the new cell was not declared")
	}
	if p.Epoch(0).Status != StatusOpen || len(p.Epochs) != 1 {
		t.Error("OpenEpoch modified its input")
	}
	if open := countOpen(next); open != 1 {
		t.Errorf("%d open epochs", open)
	}
}

func countOpen(p *Policy) int {
	n := 0
	for _, e := range p.Epochs {
		if e.Status == StatusOpen {
			n++
		}
	}
	return n
}

func TestOpenEpochRefusals(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA", "cellB")
	if _, err := OpenEpoch(p, p.Epoch(0).Ring, ShardChange{}); err == nil || !strings.Contains(err.Error(), "would change nothing") {
		t.Errorf("identical ring: %v", err)
	}
	hole := Ring{{Shard: 0, Cell: "cellA"}, {Shard: 1, Cell: "cellA"}, {Shard: 2, Cell: "cellB"}}
	if _, err := OpenEpoch(p, hole, ShardChange{}); !errors.Is(err, ErrShardSet) || !strings.Contains(err.Error(), "it leaves out shard 3 of epoch 0 (to drop it, name it with --remove-shards 3)") {
		t.Errorf("ring with a hole: %v", err)
	}
	// Named, the same ring is a shrink; named wrongly, it is refused.
	if next, err := OpenEpoch(p, hole, ShardChange{Remove: []int{3}}); err != nil || !slices.Equal(next.Epoch(1).Shards, []int{0, 1, 2}) {
		t.Errorf("shrink named with Remove: %v", err)
	}
	grown := append(slices.Clone(p.Epoch(0).Ring), Slot{Shard: 4, Cell: "cellB"}, Slot{Shard: 9, Cell: "cellA"})
	for _, c := range []struct {
		ch   ShardChange
		want string
	}{
		{ShardChange{}, "it places shards 4, 9, not in epoch 0's ring (to add them, name them with --add-shards 4,9)"},
		{ShardChange{Add: []int{4}}, "beyond the change named: it places shard 9"},
		{ShardChange{Add: []int{4, 9, 10}}, "it leaves out shard 10 of epoch 0"},
		{ShardChange{Add: []int{3, 4, 9}}, "--add-shards names shard 3, already in epoch 0's ring"},
		{ShardChange{Add: []int{4, 9}, Remove: []int{7}}, "--remove-shards names shard 7, not in epoch 0's ring"},
	} {
		if _, err := OpenEpoch(p, grown, c.ch); !errors.Is(err, ErrShardSet) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ch, err, c.want)
		}
	}
	if next, err := OpenEpoch(p, grown, ShardChange{Add: []int{9, 4}}); err != nil || !slices.Equal(next.Epoch(1).Shards, []int{0, 1, 2, 3, 4, 9}) {
		t.Errorf("growth named with Add: %v", err)
	}
	conflict := CellDecl{ID: "cellA", Fingerprint: "db-2"}
	p.Cells[0].Fingerprint = "db-1"
	if _, err := OpenEpoch(p, EvenRing(4, []string{"cellB", "cellA"}), ShardChange{}, conflict); err == nil || !strings.Contains(err.Error(), "cell cellA is declared with two fingerprints, db-1 and db-2") {
		t.Errorf("conflicting fingerprint: %v", err)
	}
}

func TestRetireRules(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA")
	if _, err := Retire(p, 0); err == nil || !strings.Contains(err.Error(), "current epoch: it cannot be retired") {
		t.Errorf("retire current: %v", err)
	}
	p, _ = OpenEpoch(p, EvenRing(4, []string{"cellA", "cellB"}), ShardChange{})
	r, err := Retire(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epoch(0).Status != StatusRetired || r.Revision != p.Revision+1 || !r.Epoch(0).Ring.SamePlacement(p.Epoch(0).Ring) {
		t.Errorf("after retire: %+v", r.Epoch(0))
	}
	if _, err := Retire(r, 0); err == nil || !strings.Contains(err.Error(), "only a draining epoch") {
		t.Errorf("retire twice: %v", err)
	}
	if _, err := Retire(r, 7); err == nil {
		t.Error("retired an epoch that does not exist")
	}
}

func TestCheckTransitionSealsHistory(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA")
	p, _ = OpenEpoch(p, EvenRing(4, []string{"cellA", "cellB"}), ShardChange{})
	edits := map[string]func(q *Policy){
		"ring edited in place":  func(q *Policy) { q.Epoch(0).Ring[3].Cell = "cellB" },
		"epoch dropped":         func(q *Policy) { q.Epochs = q.Epochs[1:] },
		"status backwards":      func(q *Policy) { q.Epoch(0).Status = StatusOpen },
		"current goes back":     func(q *Policy) { q.Current = 0 },
		"revision stands still": func(q *Policy) { q.Revision = p.Revision },
		"shard set changes":     func(q *Policy) { q.Epoch(0).Shards = ShardsUpTo(8) },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			q := p.Clone()
			q.Revision++
			edit(q)
			if err := CheckTransition(p, q); !errors.Is(err, ErrSealed) {
				t.Errorf("CheckTransition = %v, want ErrSealed", err)
			}
		})
	}
	ok := p.Clone()
	ok.Revision++
	ok.Epoch(0).Status = StatusRetired
	if err := CheckTransition(p, ok); err != nil {
		t.Errorf("a forward move was refused: %v", err)
	}
}

func TestOpenEpochFillsInAMissingFingerprint(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA", "cellB")
	next, err := OpenEpoch(p, EvenRing(4, []string{"cellB", "cellA"}), ShardChange{}, CellDecl{ID: "cellB", Fingerprint: "db-b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Cells) != 2 || next.Cells[1] != (CellDecl{ID: "cellB", Fingerprint: "db-b"}) {
		t.Errorf("cells %+v", next.Cells)
	}
	if p.Cells[1].Fingerprint != "" {
		t.Error("OpenEpoch modified its input's declarations")
	}
}

package ringfile

import (
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/idcodec"
)

// minted is an id and the cell that minted it.
type minted struct{ id, cell string }

// mintAll mints k ids from every cell of the current ring.
func mintAll(t *testing.T, p *Policy, k int, seed int64) []minted {
	t.Helper()
	var out []minted
	for _, cell := range p.CurrentEpoch().Ring.Cells() {
		pl, err := p.Placement(cell)
		if err != nil {
			t.Fatal(err)
		}
		m := idcodec.NewMinter(pl, rand.New(rand.NewSource(seed)), func() time.Time { return time.Unix(1700000000, 0) })
		for i := 0; i < k; i++ {
			id, err := m.Mint()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, minted{id, cell})
		}
	}
	return out
}

func checkResolve(t *testing.T, p *Policy, ids []minted) {
	t.Helper()
	for _, m := range ids {
		r, err := p.Resolve(m.id)
		if err != nil {
			t.Fatalf("resolve %s: %v", m.id, err)
		}
		if r.Cell != m.cell {
			t.Fatalf("%s resolves to %s, minted by %s", m.id, r.Cell, m.cell)
		}
	}
}

func TestAddCellViaNewEpochKeepsOldIDs(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA")
	old := mintAll(t, p, 50, 1)
	res, err := MakePlan(p, Goal{Kind: GoalAddCell, Cell: "cellB"})
	if err != nil {
		t.Fatal(err)
	}
	p, err = OpenPlan(p, res.Plan)
	if err != nil {
		t.Fatal(err)
	}
	checkResolve(t, p, old) // every epoch-0 id still on cellA
	fresh := mintAll(t, p, 50, 2)
	checkResolve(t, p, fresh)
	if got := p.CurrentEpoch().Ring.Owned("cellB"); len(got) != 2 {
		t.Errorf("cellB owns %v", got)
	}
}

func TestRemoveCellViaNewEpochKeepsOldIDs(t *testing.T) {
	p := newPolicy(t, "orders", 6, "cellA", "cellB", "cellC")
	old := mintAll(t, p, 50, 3)
	res, err := MakePlan(p, Goal{Kind: GoalRemoveCell, Cell: "cellB"})
	if err != nil {
		t.Fatal(err)
	}
	p, err = OpenPlan(p, res.Plan)
	if err != nil {
		t.Fatal(err)
	}
	checkResolve(t, p, old) // ids of cellB in epoch 0 still resolve to cellB
	if _, err := p.Placement("cellB"); !errors.Is(err, idcodec.ErrStandby) {
		t.Errorf("removed cell still mints: %v", err)
	}
	checkResolve(t, p, mintAll(t, p, 50, 4))
}

// The reference's addShardViaNewEpochIsSafe and removeShardViaNewEpochIsSafe,
// on rings as a reference store may hold them: a shard added in a new epoch,
// a shard removed in one. Such rings fail Validate here (every ring must
// place every shard), but resolution must still never wrap.
func TestShardAddedOrRemovedByEpochNeverWraps(t *testing.T) {
	p := &Policy{Namespace: "orders", Current: 2, Revision: 3, Epochs: []Epoch{
		{Number: 0, Status: StatusDraining, Ring: Ring{{Shard: 0, Cell: "a"}, {Shard: 1, Cell: "b"}}},
		{Number: 1, Status: StatusDraining, Ring: Ring{{Shard: 0, Cell: "a"}, {Shard: 1, Cell: "b"}, {Shard: 2, Cell: "c"}}},
		{Number: 2, Status: StatusOpen, Ring: Ring{{Shard: 0, Cell: "a"}, {Shard: 2, Cell: "c"}}},
	}}
	cases := []struct{ id, cell string }{
		{"orders.e0.s1.X", "b"}, // born before shard 2 was added: still b
		{"orders.e1.s2.X", "c"}, // the added shard
		{"orders.e1.s1.X", "b"}, // removed from epoch 2, kept by epoch 1
	}
	for _, c := range cases {
		if r, err := p.Resolve(c.id); err != nil || r.Cell != c.cell {
			t.Errorf("%s -> %+v, %v; want %s", c.id, r, err, c.cell)
		}
	}
	// The reference would wrap these to the slot at shard mod ring length.
	for _, id := range []string{"orders.e0.s2.X", "orders.e2.s1.X", "orders.e2.s3.X"} {
		if r, err := p.Resolve(id); !errors.Is(err, ErrUnplaced) {
			t.Errorf("%s -> %+v, %v; want ErrUnplaced", id, r, err)
		}
	}
}

func TestResolveEdgeCases(t *testing.T) {
	p := newPolicy(t, "orders", 4, "cellA", "cellB")
	p, _ = OpenEpoch(p, EvenRing(4, []string{"cellB", "cellA"}), ShardChange{})
	p, _ = Retire(p, 0)
	cases := []struct {
		id, cell string
		err      error
		msg      string
	}{
		{id: "orders.e0.s3.01ARZ", cell: "cellB"},        // retired epochs still resolve
		{id: "orders.e1.s3.01ARZ", cell: "cellA"},        // the open epoch
		{id: "orders.ccellA.e1.s3.01ARZ", cell: "cellA"}, // with its minting cell's label
		{id: "wfi_0123", cell: "cellA"},                  // legacy: shard 0 of epoch 0
		{id: "orders.ccellB.e1.s3.01ARZ", err: ErrCellMismatch, msg: "its label names cell cellB, but epoch 1 places shard 3 on cell cellA"},
		{id: "orders.e9.s0.01ARZ", err: ErrNotReady, msg: "epoch 9 is not in this policy"},
		{id: "orders.e1.s4.01ARZ", err: ErrUnplaced, msg: "places no cell on shard 4"},
		{id: "payments.e1.s0.01ARZ", err: ErrOtherNamespace},
	}
	for _, c := range cases {
		r, err := p.Resolve(c.id)
		if c.err != nil {
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: err %v, want %v %q", c.id, err, c.err, c.msg)
			}
			continue
		}
		if err != nil || r.Cell != c.cell {
			t.Errorf("%s -> %+v, %v; want %s", c.id, r, err, c.cell)
		}
	}
}

func TestResolveFailsClosedWithoutEpochs(t *testing.T) {
	p := &Policy{Namespace: "orders", Current: NoEpoch}
	for _, id := range []string{"orders.e0.s0.X", "wfi_legacy"} {
		if _, err := p.Resolve(id); !errors.Is(err, ErrNotReady) {
			t.Errorf("%s: %v", id, err)
		}
	}
	if _, err := p.Placement("a"); !errors.Is(err, ErrNotReady) {
		t.Errorf("placement: %v", err)
	}
	// A history without its genesis: legacy ids fail closed too.
	p = &Policy{Namespace: "orders", Current: 3, Epochs: []Epoch{{Number: 3, Status: StatusOpen, Ring: Ring{{Cell: "a"}}}}}
	if _, err := p.Resolve("wfi_legacy"); !errors.Is(err, ErrNotReady) {
		t.Errorf("legacy without epoch 0: %v", err)
	}
}

func TestActiveCellsSkipRetired(t *testing.T) {
	p := newPolicy(t, "orders", 4, "a")
	p, _ = OpenEpoch(p, EvenRing(4, []string{"b", "c"}), ShardChange{})
	if got := strings.Join(p.ActiveCells(), ","); got != "a,b,c" {
		t.Errorf("active %s", got)
	}
	p, _ = Retire(p, 0)
	if got := strings.Join(p.ActiveCells(), ","); got != "b,c" {
		t.Errorf("active after retire %s", got)
	}
}

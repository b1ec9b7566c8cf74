package ringtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/fusee-dev/fusee/ringfile"
)

// errNothing marks a claim that writes nothing (a replica, an exempt one).
var errNothing = errors.New("nothing to write")

// Bind claims cell for fp through st's Update, as `fusee ring bind` does.
func Bind(ctx context.Context, st ringfile.Store, cell, fp string) (ringfile.Claim, error) {
	var claim ringfile.Claim
	_, err := st.Update(ctx, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		next, c, err := ringfile.Bind(cur, cell, fp)
		claim = c
		if err == nil && next == nil {
			err = errNothing
		}
		return next, err
	})
	if errors.Is(err, errNothing) {
		err = nil
	}
	return claim, err
}

// Prune prunes st's bindings against live, as `fusee ring prune-bindings`.
func Prune(ctx context.Context, st ringfile.Store, live []ringfile.LiveNode) (ringfile.BindingsChange, error) {
	var ch ringfile.BindingsChange
	_, err := st.Update(ctx, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		next, c := ringfile.Prune(cur, live)
		ch = c
		if next == nil {
			return nil, errNothing
		}
		return next, nil
	})
	if errors.Is(err, errNothing) {
		err = nil
	}
	return ch, err
}

// BindingScenario runs the reference's cell binding scenario on the
// stores open makes for two namespaces, prefix+"orders" and
// prefix+"payments" (each new and empty): claim,
// replica, conflict, another cell, another namespace, no fingerprint;
// prune removes orphans, keeps a binding a live node names and one a live
// epoch places, and a pruned id can be claimed again.
func BindingScenario(t *testing.T, prefix string, open func(ns string) ringfile.Store) {
	ctx := context.Background()
	create := func(ns string, cells ...string) ringfile.Store {
		st := open(ns)
		p, err := ringfile.OpenEpoch(&ringfile.Policy{Namespace: ns, Current: ringfile.NoEpoch}, ringfile.EvenRing(4, cells), ringfile.ShardChange{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(ctx, p, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
			t.Fatal(err)
		}
		return st
	}
	orders, payments := create(prefix+"orders", "cellA"), create(prefix+"payments", "cellA")
	claim := func(st ringfile.Store, cell, fp string, want ringfile.Claim) {
		t.Helper()
		got, err := Bind(ctx, st, cell, fp)
		if err != nil || got != want {
			t.Fatalf("%s: bind %s %q: %v, %v; want %v", st.Name(), cell, fp, got, err, want)
		}
	}
	claim(orders, "cellA", "db-1", ringfile.ClaimNew)
	claim(orders, "cellA", "db-1", ringfile.ClaimReplica)
	var conflict *ringfile.BindingConflictError
	if _, err := Bind(ctx, orders, "cellA", "db-2"); !errors.As(err, &conflict) || conflict.Bound != "db-1" || conflict.Claimed != "db-2" {
		t.Fatalf("a second database claiming cellA: %v", err)
	}
	claim(orders, "cellB", "db-2", ringfile.ClaimNew)   // another cell: its own binding
	claim(payments, "cellA", "db-9", ringfile.ClaimNew) // another namespace: its own bindings
	claim(orders, "cellC", "", ringfile.ClaimExempt)    // no fingerprint: exempt
	claim(orders, "standby", "db-3", ringfile.ClaimNew) // a cell no ring places yet
	wantBindings(t, ctx, orders, "cellA=db-1 cellB=db-2 standby=db-3")
	wantBindings(t, ctx, payments, "cellA=db-9")

	// Only standby's node is live; cellA is placed by the open epoch;
	// cellB is an orphan.
	live := []ringfile.LiveNode{{Namespace: prefix + "orders", Cell: "standby"}, {Namespace: prefix + "payments", Cell: "cellB"}}
	ch, err := Prune(ctx, orders, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Removed) != 1 || ch.Removed[0].Cell != "cellB" || len(ch.Kept) != 1 || ch.Kept[0].Cell != "cellA" || !slices.Equal(ch.Kept[0].Epochs, []int64{0}) {
		t.Fatalf("prune: %+v", ch)
	}
	wantBindings(t, ctx, orders, "cellA=db-1 standby=db-3")
	wantBindings(t, ctx, payments, "cellA=db-9")
	claim(orders, "cellB", "db-4", ringfile.ClaimNew) // the pruned id, claimed again

	// Once no live epoch places cellA, a prune frees it too.
	_, err = orders.Update(ctx, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		next, err := ringfile.OpenEpoch(cur, ringfile.EvenRing(4, []string{"standby"}), ringfile.ShardChange{})
		if err != nil {
			return nil, err
		}
		return ringfile.Retire(next, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := Prune(ctx, orders, nil); err != nil || len(ch.Removed) != 2 || len(ch.Kept) != 1 || ch.Kept[0].Cell != "standby" {
		t.Fatalf("prune after retiring epoch 0: %+v %v", ch, err)
	}
	wantBindings(t, ctx, orders, "standby=db-3")
	claim(orders, "cellA", "db-5", ringfile.ClaimNew)
}

// BindingRace has claimers racing on one cell of a namespace: each of
// perSide claims it with fingerprint A and as many with B, each through
// its own store (open makes one). Exactly one fingerprint must win, every
// claimer of it succeed (one claim, the rest replicas) and every claimer
// of the other be refused with a conflict.
func BindingRace(t *testing.T, perSide int, open func() ringfile.Store) {
	ctx := context.Background()
	type result struct {
		fp    string
		claim ringfile.Claim
		err   error
	}
	results := make(chan result, 2*perSide)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := 0; i < 2*perSide; i++ {
		fp := "fp-A"
		if i%2 == 1 {
			fp = "fp-B"
		}
		st := open()
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			c, err := Bind(ctx, st, "cellX", fp)
			results <- result{fp, c, err}
		}()
	}
	start.Done()
	done.Wait()
	close(results)
	won := map[string]int{}
	var refused []string
	counts := map[string]int{}
	for r := range results {
		switch {
		case r.err == nil && r.claim == ringfile.ClaimNew:
			won[r.fp]++
		case r.err == nil && r.claim == ringfile.ClaimReplica:
			counts[r.fp]++
		case errors.Is(r.err, ringfile.ErrBindingConflict):
			refused = append(refused, r.fp)
		default:
			t.Errorf("claimer of %s: %v, %v", r.fp, r.claim, r.err)
		}
	}
	if len(won) != 1 {
		t.Fatalf("claims that bound the cell: %v; want exactly one", won)
	}
	for fp, n := range won {
		if n != 1 || counts[fp] != perSide-1 || len(refused) != perSide || slices.Contains(refused, fp) {
			t.Fatalf("%s won: %d claims, %d replicas, %d refused (%v)", fp, n, counts[fp], len(refused), refused)
		}
	}
}

func wantBindings(t *testing.T, ctx context.Context, st ringfile.Store, want string) {
	t.Helper()
	p, err := ringfile.LoadValidFrom(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for i, b := range p.Bindings() {
		if i > 0 {
			got += " "
		}
		got += fmt.Sprintf("%s=%s", b.Cell, b.Fingerprint)
	}
	if got != want {
		t.Fatalf("%s: bindings %q, want %q", st.Name(), got, want)
	}
}

package sim

import (
	"context"
	"testing"
)

// genMem generates a workload into in-memory shards.
func genMem(t testing.TB, o GenOptions) (*Engine, *memBackend) {
	t.Helper()
	o, err := o.check()
	if err != nil {
		t.Fatal(err)
	}
	b := newMemBackend(o.Shards)
	e := newEngine(b, o.Config)
	e.recover()
	if err := e.generate(context.Background(), o); err != nil {
		t.Fatalf("generate: %v", err)
	}
	return e, b
}

// reopenMem starts a new engine over the same shards, as a restart would.
func reopenMem(b *memBackend, cfg Config) *Engine {
	e := newEngine(b, cfg)
	e.recover()
	return e
}

// TestExportedConstructors: GenerateShards and NewMemEngine give what the
// internal helpers give.
func TestExportedConstructors(t *testing.T) {
	o := GenOptions{Shards: 3, Runs: 200, Seed: 5}
	sh, err := GenerateShards(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, b := genMem(t, o)
	sameCanon(t, "GenerateShards", logical(t, b.sh), logical(t, sh))
	if err := NewMemEngine(sh, Config{}).Drive(context.Background()); err != nil {
		t.Fatal(err)
	}
	driveBackend(t, b, Config{})
	sameCanon(t, "NewMemEngine", logical(t, b.sh), logical(t, sh))
}

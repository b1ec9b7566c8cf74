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

package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// cancelAfter is a context that is done from its n+1st Err call on: it
// shows that work looks at its context part way through, not only first.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func newCancelAfter(n int64) *cancelAfter {
	c := &cancelAfter{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestCancelledContext(t *testing.T) {
	w := newWorld(t, 2, 0)
	for i := range 10 {
		w.start(fmt.Sprintf("wf-%d", i), "T", model.OriginFresh, model.ParentRef{}, "", nil, 1)
	}
	dir := filepath.Join(t.TempDir(), "data")
	writeDir(t, w, dir)

	if st, err := LoadContext(cancelled(), vfs.Default, dir); !errors.Is(err, context.Canceled) || st != nil {
		t.Fatalf("LoadContext with a cancelled context: %v", err)
	}
	// Cancelled after the lock is taken, between shards: the lock is
	// released again.
	if _, err := LoadContext(newCancelAfter(2), vfs.Default, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("LoadContext cancelled during recovery: %v", err)
	}
	if _, _, err := journal.OpenContext(newCancelAfter(1), vfs.Default, dir, journal.OpenOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenContext cancelled during recovery: %v", err)
	}
	st, err := LoadContext(context.Background(), vfs.Default, dir)
	if err != nil {
		t.Fatalf("LoadContext after cancelled loads: %v", err)
	}
	if fs, err := VerifyContext(cancelled(), st); !errors.Is(err, context.Canceled) || fs != nil {
		t.Fatalf("VerifyContext with a cancelled context: %v, %d findings", err, len(fs))
	}
	if err := WriteDumpContext(cancelled(), io.Discard, st.Shards, DumpOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteDumpContext with a cancelled context: %v", err)
	}
	if fs, err := VerifyContext(context.Background(), st); err != nil || Problems(fs) != 0 {
		t.Fatalf("VerifyContext: %v, %v", err, fs)
	}
}

// Verify and the dump look at their context within a shard too, every
// checkEvery runs.
func TestCancelWithinShard(t *testing.T) {
	w := newWorld(t, 1, 0)
	for i := range 3 * checkEvery {
		w.start(fmt.Sprintf("wf-%d", i), "T", model.OriginFresh, model.ParentRef{}, "", nil, 1)
	}
	st := w.state()
	// Two looks pass (before Verify, before the shard); the next is within
	// the shard's runs.
	if _, err := VerifyContext(newCancelAfter(2), st); !errors.Is(err, context.Canceled) {
		t.Fatalf("VerifyContext cancelled within a shard: %v", err)
	}
	if err := WriteDumpContext(newCancelAfter(2), io.Discard, st.Shards, DumpOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteDumpContext cancelled within the runs: %v", err)
	}
}

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/reshard"
)

// cancelOnWrite is a stderr that cancels a context once a line containing
// trigger has been written to it: the reshard's progress line for a
// finished phase stands in for Ctrl-C arriving mid-reshard.
type cancelOnWrite struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	cancel  context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.trigger) {
		w.cancel()
	}
	return n, err
}

func logicalDump(t *testing.T, dir string) string {
	t.Helper()
	st, err := check.Load(vfs.Default, dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReshardInterrupted cancels the context (as SIGINT does) after the
// plan phase: exit 130, a message saying the directory is unchanged and
// that the same command starts over, reshard.new gone, and the logical
// content and shard count as before. A rerun then reshards.
func TestReshardInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := sim.Generate(context.Background(), vfs.Default, dir, sim.GenOptions{Shards: 3, Runs: 200, Seed: 8}); err != nil {
		t.Fatal(err)
	}
	before := logicalDump(t, dir)
	for _, dry := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		errw := &cancelOnWrite{trigger: "reshard: plan:", cancel: cancel}
		var out bytes.Buffer
		args := []string{"reshard", dir, "5"}
		if dry {
			args = append(args, "--dry-run")
		}
		code := Run(ctx, "test", args, strings.NewReader(""), &out, errw, nil)
		cancel()
		stderr := errw.buf.String()
		if code != ExitCancelled {
			t.Fatalf("dry run %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", dry, code, ExitCancelled, out.String(), stderr)
		}
		want := "fusee: reshard interrupted before its switch: " + dir + " is unchanged (its old shards, which open as before) and what was built was removed; there is nothing to finish: run the same command again to reshard\n"
		if dry {
			want = "fusee: dry run interrupted: nothing in " + dir + " was changed; run it again for the report\n"
		}
		if !strings.HasSuffix(stderr, want) {
			t.Errorf("dry run %v: stderr\n%s\nwant it to end with\n%s", dry, stderr, want)
		}
		if out.Len() != 0 {
			t.Errorf("dry run %v: a report on stdout after an interruption:\n%s", dry, out.String())
		}
		if _, err := os.Stat(filepath.Join(dir, reshard.NewDirName)); !os.IsNotExist(err) {
			t.Errorf("dry run %v: %s after an interruption: %v", dry, reshard.NewDirName, err)
		}
		if got := logicalDump(t, dir); got != before {
			t.Fatalf("dry run %v: the logical dump changed after an interruption", dry)
		}
		if out, _, code := runFusee(t, nil, "verify", dir); code != 0 || out != "ok: 3 shards, 200 runs, no findings\n" {
			t.Fatalf("dry run %v: verify after an interruption: exit %d\n%s", dry, code, out)
		}
	}
	if out, errOut, code := runFusee(t, nil, "reshard", dir, "5"); code != 0 {
		t.Fatalf("rerun after an interruption: exit %d\n%s%s", code, out, errOut)
	}
	if got := logicalDump(t, dir); got != before {
		t.Fatal("the logical dump changed after the rerun")
	}
}

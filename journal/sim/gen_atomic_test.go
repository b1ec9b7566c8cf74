package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
)

// leftovers lists the entries of parent named like Generate's temporary
// directories.
func leftovers(t *testing.T, parent string) []string {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, e := range ents {
		if strings.Contains(e.Name(), genTmpInfix) {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

// TestGenInterrupted: a gen cancelled mid-way leaves neither the directory
// nor its temporary sibling, and says so with an error wrapping
// context.Canceled.
func TestGenInterrupted(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "gi")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	o := GenOptions{Shards: 2, Runs: 5000, Seed: 3,
		Progress: func(Progress) { calls++; cancel() }}
	_, err := Generate(ctx, vfs.Default, dir, o)
	if err == nil {
		t.Fatal("cancelled gen succeeded")
	}
	if calls == 0 {
		t.Fatal("no progress callback: the test did not cancel mid-way")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
	if want := "gen interrupted; " + dir + " was not created"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a cancelled gen (stat: %v)", dir, err)
	}
	if tmp := leftovers(t, parent); len(tmp) > 0 {
		t.Errorf("cancelled gen left temporary directories %q", tmp)
	}
}

// TestGenNoLeftovers: a successful gen leaves the directory (also when it
// existed empty) and no temporary sibling.
func TestGenNoLeftovers(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"fresh", "empty"} {
		dir := filepath.Join(parent, name)
		if name == "empty" {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := Generate(context.Background(), vfs.Default, dir, GenOptions{Shards: 2, Runs: 100, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Dir != dir {
			t.Errorf("report dir %q, want %q", rep.Dir, dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "fusee.meta")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		openState(t, dir)
	}
	if tmp := leftovers(t, parent); len(tmp) > 0 {
		t.Errorf("gen left temporary directories %q", tmp)
	}
}

// TestGenResidentByRuns: gen keeps defaultMaxResident runs resident up
// to journal.LargeBuildRuns runs and largeMaxResident past it, unless the
// caller set MaxResident.
func TestGenResidentByRuns(t *testing.T) {
	for _, c := range []struct{ runs, set, want int }{
		{journal.LargeBuildRuns, 0, defaultMaxResident},
		{journal.LargeBuildRuns + 1, 0, largeMaxResident},
		{journal.LargeBuildRuns + 1, 25, 25},
	} {
		o, err := GenOptions{Shards: 2, Runs: c.runs, Seed: 1, Config: Config{MaxResident: c.set}}.check()
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Config.withDefaults().MaxResident; got != c.want {
			t.Errorf("%d runs, MaxResident set to %d: %d resident, want %d", c.runs, c.set, got, c.want)
		}
	}
}

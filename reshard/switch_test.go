package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

var errStop = errors.New("stopped by the test")

// TestInterruptedAtEveryStep stops a reshard at each step of its switch
// (as a crash between two steps would) and checks what an operator then
// sees: before the switch the directory opens as it was; after it, the
// engine refuses it until `fusee reshard <dir>` (no count) finishes the
// job, and the result equals an uninterrupted reshard. A count that
// disagrees with the interrupted one is refused.
func TestInterruptedAtEveryStep(t *testing.T) {
	steps := []string{"before-switch", "meta-switching", "old-wal-aside", "new-wal-in",
		"old-shards-aside", "new-shards-in", "meta-final"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			dir := genDir(t, 3, scaled(200), 31)
			before := logicalDump(t, dir)
			reshard.SetTestHook(func(s string) error {
				if s == step {
					return errStop
				}
				return nil
			})
			_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 5})
			reshard.SetTestHook(nil)
			if !errors.Is(err, errStop) {
				t.Fatalf("reshard: %v, want the test's stop", err)
			}
			m, err := meta.ReadAny(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case step == "before-switch":
				if m.Switching() || m.Shards != 3 {
					t.Fatalf("stopped before the switch, meta says %+v", m)
				}
				sameDump(t, "stopped before the switch", before, logicalDump(t, dir))
				if _, err := os.Stat(filepath.Join(dir, reshard.NewDirName)); !os.IsNotExist(err) {
					t.Errorf("reshard.new left behind after a failed build: %v", err)
				}
				return
			case step == "meta-final":
				if m.Switching() || m.Shards != 5 {
					t.Fatalf("stopped after the final meta, meta says %+v", m)
				}
			default:
				if !m.Switching() {
					t.Fatalf("stopped at %s, meta says %+v", step, m)
				}
				if _, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true}); !errors.Is(err, meta.ErrSwitching) {
					t.Fatalf("opening mid-switch: %v, want ErrSwitching", err)
				}
				_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 4})
				var ip *reshard.InProgressError
				if !errors.As(err, &ip) || !errors.Is(err, meta.ErrSwitching) {
					t.Fatalf("a different count mid-switch: %v, want an InProgressError", err)
				}
			}
			rep := doReshard(t, dir, 0, reshard.Options{})
			// After the final fusee.meta too: the report is pending, and
			// the finishing run ends the cleanup and reports the reshard.
			want := reshard.OutcomeFinished
			if rep.Outcome != want {
				t.Errorf("finishing: outcome %s, want %s", rep.Outcome, want)
			}
			for _, left := range []string{reshard.NewDirName, reshard.OldDirName} {
				if _, err := os.Stat(filepath.Join(dir, left)); !os.IsNotExist(err) {
					t.Errorf("%s left behind: %v", left, err)
				}
			}
			verifyClean(t, dir)
			sameDump(t, fmt.Sprintf("finished after stopping at %s", step), before, logicalDump(t, dir))
		})
	}
}

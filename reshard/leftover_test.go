package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// stoppedAt is a copy of c's directory whose reshard stopped right after
// the named switch step ("" for the directory before any reshard).
func (c *crashCase) stoppedAt(t *testing.T, step string) *vfs.MemFS {
	t.Helper()
	mem := c.fresh()
	if step == "" {
		return mem
	}
	reshard.SetTestHook(func(s string) error {
		if s == step {
			return errStop
		}
		return nil
	})
	defer reshard.SetTestHook(nil)
	if _, err := reshard.Reshard(context.Background(), mem, memDir, reshard.Options{Shards: c.newN}); !errors.Is(err, errStop) {
		t.Fatalf("stopping at %s: %v", step, err)
	}
	return mem
}

func writeMeta(t *testing.T, fs vfs.FS, m meta.Meta) {
	t.Helper()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.ReplaceFile(fs, fs.PathJoin(memDir, meta.FileName), data); err != nil {
		t.Fatal(err)
	}
}

func stray(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	if err := fs.MkdirAll(fs.PathJoin(memDir, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(fs.PathJoin(memDir, dir, "stray.txt"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("not fusee's"))
	f.Close()
}

// tree lists every file under the directory with its size: a snapshot to
// check that a refusal changed nothing.
func tree(t *testing.T, fs vfs.FS) string {
	t.Helper()
	var out []string
	var walk func(string)
	walk = func(p string) {
		names, err := fs.List(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			q := fs.PathJoin(p, n)
			st, err := fs.Stat(q)
			if err != nil {
				t.Fatal(err)
			}
			if st.IsDir() {
				walk(q)
				continue
			}
			out = append(out, fmt.Sprintf("%s %d", q, st.Size()))
		}
	}
	walk(memDir)
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestLeftoversAndBadInput: reshard.new and reshard.old, full, empty or
// holding a stray file, with each state of fusee.meta, get a correct
// finish (nothing lost) or, when fusee.meta and the new shards disagree,
// an exact refusal that changes nothing.
func TestLeftoversAndBadInput(t *testing.T) {
	c := newCrashCase(t, 3, 5, 60, 21, 0)
	old := meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: 3}
	switching := func(from, to int) meta.Meta {
		return meta.Meta{Format: meta.Switching, Log: meta.LogShared, Shards: to, OldShards: from, NewShards: to}
	}
	cases := []struct {
		name   string
		stop   string          // the switch step the reshard stopped after
		meta   *meta.Meta      // fusee.meta written over the stopped one
		stray  []string        // directories given a stray file
		shards int             // the count asked (0: none)
		want   reshard.Outcome // the outcome, or
		err    string          // the exact error (a regexp)
		after  int             // the shard count afterwards
	}{
		{name: "old meta, full reshard.new", stop: "meta-switching", meta: &old, shards: 5, want: reshard.OutcomeDone, after: 5},
		{name: "old meta, full reshard.new, no count", stop: "meta-switching", meta: &old, want: reshard.OutcomeCleanedUp, after: 3},
		{name: "old meta, stray reshard.new and reshard.old", stray: []string{reshard.NewDirName, reshard.OldDirName}, shards: 5, want: reshard.OutcomeDone, after: 5},
		{name: "old meta, stray reshard.old only, no count", stray: []string{reshard.OldDirName}, want: reshard.OutcomeCleanedUp, after: 3},
		{name: "old meta, stray in reshard.new/shards", stray: []string{reshard.NewDirName + "/shards"}, shards: 5, want: reshard.OutcomeDone, after: 5},
		{name: "switching, new copies in reshard.new", stop: "meta-switching", want: reshard.OutcomeFinished, after: 5},
		{name: "switching, same count asked", stop: "meta-switching", shards: 5, want: reshard.OutcomeFinished, after: 5},
		{name: "switching, stray files in both", stop: "old-wal-aside", stray: []string{reshard.NewDirName, reshard.OldDirName}, want: reshard.OutcomeFinished, after: 5},
		{name: "switching, wal in, shards not", stop: "new-wal-in", stray: []string{reshard.OldDirName}, want: reshard.OutcomeFinished, after: 5},
		{name: "switching, old shards aside", stop: "old-shards-aside", want: reshard.OutcomeFinished, after: 5},
		{name: "switching, both in, reshard.new empty", stop: "new-shards-in", stray: []string{reshard.NewDirName}, want: reshard.OutcomeFinished, after: 5},
		{name: "new meta, reshard.old and reshard.new left", stop: "meta-final", stray: []string{reshard.NewDirName, reshard.OldDirName}, want: reshard.OutcomeFinished, after: 5},
		{name: "new meta, asked again", stop: "meta-final", shards: 5, want: reshard.OutcomeFinished, after: 5},
		{name: "switching, another count asked", stop: "meta-switching", shards: 4,
			err: `^/data: a reshard from 3 to 5 shards was interrupted after its switch began; it must be finished first, without a count or with 5, not with 4$`},
		{name: "switching to 4, 5 built", stop: "meta-switching", meta: ptr(switching(3, 4)),
			err: `^/data: fusee.meta says a reshard to 4 shards was interrupted, but /data/reshard.new/shards does not hold 4 new shards \(.*shard store /data/reshard.new/shards/0000/store.*\); refusing to finish it, nothing was changed: was fusee.meta or reshard.new changed by hand\? Restore the directory from a backup$`},
		{name: "switching to 6, 5 moved in", stop: "new-shards-in", meta: ptr(switching(3, 6)),
			err: `^/data: fusee.meta says a reshard to 6 shards was interrupted, but /data/shards does not hold 6 new shards \(.*/data/shards/0000/store.*\); refusing to finish it, nothing was changed`},
		{name: "switching, nothing built", meta: ptr(switching(3, 5)),
			err: `^/data: fusee.meta says a reshard to 5 shards was interrupted, but /data/shards does not hold 5 new shards \(.*/data/shards/0000/store.*\); refusing`},
		{name: "switching to 2, 5 built (a shard too many)", stop: "meta-switching", meta: ptr(switching(3, 2)),
			err: `does not hold 2 new shards \(.*\); refusing`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := c.stoppedAt(t, tc.stop)
			if tc.meta != nil {
				writeMeta(t, fs, *tc.meta)
			}
			for _, d := range tc.stray {
				stray(t, fs, d)
			}
			snap := tree(t, fs)
			rep, err := reshard.Reshard(context.Background(), fs, memDir, reshard.Options{Shards: tc.shards})
			if tc.err != "" {
				if err == nil || !regexp.MustCompile(tc.err).MatchString(err.Error()) {
					t.Fatalf("reshard: %v\nwant an error matching %s", err, tc.err)
				}
				if got := tree(t, fs); got != snap {
					t.Fatalf("the refusal changed the directory:\n%s\nwas\n%s", got, snap)
				}
				return
			}
			if err != nil {
				t.Fatalf("reshard: %v", err)
			}
			if rep.Outcome != tc.want {
				t.Errorf("outcome %s, want %s", rep.Outcome, tc.want)
			}
			for _, left := range []string{reshard.NewDirName, reshard.OldDirName} {
				if fileExists(fs, fs.PathJoin(memDir, left)) {
					t.Errorf("%s left behind", left)
				}
			}
			m, err := meta.ReadAny(fs, memDir)
			if err != nil || m.Switching() || m.Shards != tc.after {
				t.Fatalf("fusee.meta %+v, %v; want %d shards", m, err, tc.after)
			}
			dump, err := memVerifyDump(fs)
			if err != nil {
				t.Fatal(err)
			}
			if dump != c.before {
				t.Fatal("the logical dump differs from the original")
			}
		})
	}
	t.Logf("%d leftover and bad-input cases", len(cases))
}

func ptr[T any](v T) *T { return &v }

func fileExists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

// TestFullDiskAtTheSwitch: the disk fills up as the switching fusee.meta
// is written; the error says so exactly, the directory opens as it was,
// and once space is freed the same command finishes the reshard.
func TestFullDiskAtTheSwitch(t *testing.T) {
	c := newCrashCase(t, 3, 5, 60, 21, 0)
	fs := c.fresh()
	full := false
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.Contains(op.Path, ".fusee.meta.tmp") && op.Kind == errorfs.OpCreate {
			full = true
		}
		if full && (op.Kind == errorfs.OpCreate || isWrite(op.Kind) || isSync(op.Kind) || op.Kind == errorfs.OpMkdirAll) {
			return &os.PathError{Op: opName(op.Kind), Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})
	_, err := reshard.Reshard(context.Background(), errorfs.Wrap(guardLinks(fs), inj), memDir, reshard.Options{Shards: 5})
	want := `^/data: the reshard stopped: beginning its switch failed: the directory is either as it was or its switch has begun: writing /data/fusee.meta: create /data/.fusee.meta.tmp[0-9a-z]+: no space left on device; its report is kept in /data/reshard.new/report.json$`
	if err == nil || !regexp.MustCompile(want).MatchString(err.Error()) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("reshard on a full disk: %v\nwant an error matching %s", err, want)
	}
	if saw, err := c.recoverDir(fs, nil); err != nil || saw != sawOld {
		t.Fatalf("after the full disk: %s, %v", saw, err)
	}
	if err := c.checkDone(fs); err != nil {
		t.Fatal(err)
	}
}

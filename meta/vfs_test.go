package meta

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var holderRE = regexp.MustCompile(`in use by pid [0-9]+ \(.*\)`)

// transcript runs one story of opens, refusals and writes against the
// directory dir on fs, and records what each step returned with dir
// written as DIR. The same story on the disk and on a memory filesystem
// must read the same: one implementation, whatever the filesystem.
func transcript(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	var out []string
	note := func(step string, err error) {
		t.Helper()
		line := step + ": "
		switch {
		case err == nil:
			line += "ok"
		default:
			line += fmt.Sprintf("%T %s", err, err)
		}
		if errors.Is(err, iofs.ErrNotExist) {
			line += " (fs.ErrNotExist)"
		}
		// The operating system and memfs word a missing file apart.
		line = strings.ReplaceAll(line, "no such file or directory", "file does not exist")
		line = strings.ReplaceAll(line, dir, "DIR")
		// Only the disk can name the holder (from /proc/locks).
		line = holderRE.ReplaceAllString(line, "in use by another process (engine, reshard or inspect)")
		out = append(out, line)
	}
	list := func(step string) {
		t.Helper()
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		out = append(out, step+": ["+strings.Join(names, " ")+"]")
	}

	_, err := Open(fs, dir, Options{})
	note("open missing", err)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Open(fs, dir, Options{})
	note("open empty", err)
	list("after open empty")

	d, err := Create(fs, dir, local8, nil)
	note("create", err)
	list("after create")
	_, err = Open(fs, dir, Options{})
	note("open while created", err)
	_, err = Lock(fs, dir)
	note("lock while created", err)
	_, err = Create(fs, dir, local8, nil)
	note("create over", err)
	note("write switching", d.Write(switching))
	note("close", d.Close())

	_, err = Open(fs, dir, Options{Log: LogShared})
	note("open switching", err)
	_, err = Read(fs, dir)
	note("read switching", err)
	m, err := ReadAny(fs, dir)
	note(fmt.Sprintf("read any %+v", m), err)
	d, err = Open(fs, dir, Options{Log: LogShared, AllowSwitching: true})
	note("open switching allowed", err)
	_, err = Open(fs, dir, Options{Log: LogShared, AllowSwitching: true})
	note("open again", err)
	note("write old log", d.Write(Meta{Format: FormatLocal, Log: LogPerShard, Shards: 16}))
	note("close", d.Close())
	note("write after close", d.Write(local8))

	_, err = Open(fs, dir, Options{Log: LogShared})
	note("open old log", err)
	d, err = Open(fs, dir, Options{Log: LogPerShard})
	note("open old log as log=2", err)
	_, err = Open(fs, dir, Options{})
	note("open while open", err)
	note("close", d.Close())
	list("at the end")
	return out
}

func TestSameOnDiskAndInMemory(t *testing.T) {
	disk := transcript(t, vfs.Default, filepath.Join(t.TempDir(), "data"))
	mem := transcript(t, vfs.NewMem(), "/data")
	if !slices.Equal(disk, mem) {
		t.Errorf("the disk and memfs disagree:\ndisk:\n  %s\nmem:\n  %s", strings.Join(disk, "\n  "), strings.Join(mem, "\n  "))
	}
	want := []string{
		"open missing: *fmt.wrapError data directory DIR: stat DIR: file does not exist (fs.ErrNotExist)",
		"open empty: *fmt.wrapError DIR is not a fusee data directory: it has no fusee.meta: open DIR/fusee.meta: file does not exist (fs.ErrNotExist)",
		"after open empty: []",
		"create: ok",
		"after create: [LOCK fusee.meta]",
		"open while created: *meta.InUseError DIR is in use by another process",
		"lock while created: *meta.InUseError DIR is in use by another process",
		"create over: *fmt.wrapError DIR is already a fusee data directory",
		"write switching: ok",
		"close: ok",
		"open switching: *meta.SwitchingError DIR: an interrupted reshard (from 8 to 16 shards)",
		"read switching: *meta.SwitchingError DIR: an interrupted reshard (from 8 to 16 shards)",
		"read any {Format:reshard Log:3 Shards:16 OldShards:8 NewShards:16}: ok",
		"open switching allowed: ok",
		"open again: *meta.InUseError DIR is in use by another process",
		"write old log: ok",
		"close: ok",
		"write after close: *errors.errorString DIR: writing fusee.meta after Close",
		"open old log: *meta.LogError DIR uses log format 2 (a log per shard), older than the format 3 this command reads",
		"open old log as log=2: ok",
		"open while open: *meta.InUseError DIR is in use by another process",
		"close: ok",
		"at the end: [LOCK fusee.meta]",
	}
	if len(disk) != len(want) {
		t.Fatalf("the story has %d steps, want %d:\n  %s", len(disk), len(want), strings.Join(disk, "\n  "))
	}
	for i, w := range want {
		if !strings.HasPrefix(disk[i], w) {
			t.Errorf("step %d:\n got %s\nwant %s…", i, disk[i], w)
		}
	}
}

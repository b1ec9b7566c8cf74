package meta

import (
	"errors"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSwitchingRefused: a directory whose reshard was interrupted is
// refused by every opener, and readable only on reshard's path.
func TestSwitchingRefused(t *testing.T) {
	dir := newDir(t, switching)
	want := dir + ": an interrupted reshard (from 8 to 16 shards) must be finished before anything can open the directory: run `fusee reshard " + dir + "` to finish the interrupted reshard"

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrSwitching) {
			t.Fatalf("%s = %v, want ErrSwitching", what, err)
		}
		if err.Error() != want {
			t.Errorf("%s:\n got %s\nwant %s", what, err, want)
		}
		var se *SwitchingError
		if !errors.As(err, &se) || se.OldShards != 8 || se.NewShards != 16 || se.Dir != dir {
			t.Errorf("%s: %#v", what, err)
		}
	}
	_, err := Open(vfs.Default, dir, Options{})
	check("Open", err)
	_, err = Open(vfs.Default, dir, Options{Log: LogShared})
	check("Open(vfs.Default, log=3)", err)
	_, err = Read(vfs.Default, dir)
	check("Read", err)
	check("Check", Check(dir, switching, Options{}))

	// A refused Open released the lock.
	l, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatalf("Lock after refused Open: %v", err)
	}
	l.Unlock()

	if m, err := ReadAny(vfs.Default, dir); err != nil || m != switching {
		t.Errorf("ReadAny = %+v, %v; want %+v", m, err, switching)
	}
	d, err := Open(vfs.Default, dir, Options{Log: LogShared, AllowSwitching: true})
	if err != nil {
		t.Fatalf("Open(vfs.Default, AllowSwitching): %v", err)
	}
	defer d.Close()
	if d.Meta() != switching {
		t.Errorf("Meta() = %+v", d.Meta())
	}
	// Reshard finishes the switch: the directory opens normally again.
	done := Meta{Format: FormatLocal, Log: LogShared, Shards: 16}
	if err := d.Write(done); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if m, err := Read(vfs.Default, dir); err != nil || m != done {
		t.Errorf("Read after the switch = %+v, %v", m, err)
	}
}

func TestSwitchingMessageQuotes(t *testing.T) {
	err := &SwitchingError{Dir: "/data/my dir", OldShards: 4, NewShards: 2}
	want := "/data/my dir: an interrupted reshard (from 4 to 2 shards) must be finished before anything can open the directory: run `fusee reshard '/data/my dir'` to finish the interrupted reshard"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// TestUpgradingRefused: a directory whose upgrade was interrupted is
// refused by every opener but upgrade (AllowUpgrading), reshard included,
// with the command that finishes it; it matches ErrSwitching.
func TestUpgradingRefused(t *testing.T) {
	up := Meta{Format: Upgrading, Log: LogShared, Shards: 4}
	dir := newDir(t, up)
	want := dir + ": an interrupted upgrade (log format 2 to 3) must be finished before anything can open the directory: run `fusee upgrade " + dir + "` to finish it"
	for _, opts := range []Options{{}, {Log: LogShared}, {Log: LogPerShard}, {Log: LogShared, AllowSwitching: true}} {
		_, err := Open(vfs.Default, dir, opts)
		var ue *UpgradingError
		if !errors.As(err, &ue) || !errors.Is(err, ErrSwitching) || err.Error() != want {
			t.Fatalf("Open(%+v) = %v; want\n%s", opts, err, want)
		}
		if _, err := Read(vfs.Default, dir); err == nil || err.Error() != want {
			t.Fatalf("Read = %v", err)
		}
	}
	d, err := Open(vfs.Default, dir, Options{AllowUpgrading: true})
	if err != nil {
		t.Fatalf("Open(AllowUpgrading): %v", err)
	}
	if d.Meta() != up {
		t.Errorf("Meta = %+v, want %+v", d.Meta(), up)
	}
	d.Close()
}

func TestOldLogRefused(t *testing.T) {
	dir := newDir(t, Meta{Format: FormatLocal, Log: LogPerShard, Shards: 4})
	_, err := Open(vfs.Default, dir, Options{Log: LogShared})
	if !errors.Is(err, ErrOldLog) {
		t.Fatalf("Open(vfs.Default, log=3) of a log=2 directory = %v, want ErrOldLog", err)
	}
	want := dir + " uses log format 2 (a log per shard), older than the format 3 this command reads: stop the engine and run `fusee upgrade " + dir + "` to convert it (docs/operations.md, \"Upgrading the log format\")"
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	// Without a log requirement (upgrade's own path), it opens.
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatalf("Open(vfs.Default, any log): %v", err)
	}
	d.Close()
	d, err = Open(vfs.Default, dir, Options{Log: LogPerShard})
	if err != nil {
		t.Fatalf("Open(vfs.Default, log=2): %v", err)
	}
	d.Close()
}

func TestNewerLogIsNotOld(t *testing.T) {
	err := Check("/d", local8, Options{Log: LogPerShard})
	if err == nil || errors.Is(err, ErrOldLog) {
		t.Fatalf("Check(log=3 dir, want 2) = %v, want a non-ErrOldLog error", err)
	}
	if want := "/d uses log format 3, but this command reads only log format 2"; err.Error() != want {
		t.Errorf("got %s, want %s", err, want)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/fusee": "/var/lib/fusee",
		"data-1.2":       "data-1.2",
		"my dir":         "'my dir'",
		"it's":           `'it'\''s'`,
		"":               "''",
		"$HOME":          "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Opening a directory that is not a data directory changes nothing in it:
// not even a LOCK file is left behind.
func TestOpenNonDataDirLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(vfs.Default, dir, Options{}); err == nil {
		t.Fatal("Open of an empty directory succeeded")
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Fatalf("Open of a non-data directory left %d entries behind (first %s)", len(names), names[0].Name())
	}
}

// Nor does opening a directory whose fusee.meta is bad (does not parse, or
// a version this build does not read) leave a LOCK file in it.
func TestOpenBadMetaLeavesNoLock(t *testing.T) {
	for _, text := range []string{"garbage\n", "format=local\nlog=3\nshards=4\nversion=99\n", "format=elsewhere\nlog=3\nshards=4\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/"+FileName, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(vfs.Default, dir, Options{}); err == nil {
			t.Fatalf("Open with fusee.meta %q succeeded", text)
		}
		if _, err := os.Stat(dir + "/" + LockName); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open with fusee.meta %q left a LOCK file (stat: %v)", text, err)
		}
	}
}

package meta

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	local8    = Meta{Format: FormatLocal, Log: LogShared, Shards: 8}
	switching = Meta{Format: Switching, Log: LogShared, Shards: 16, OldShards: 8, NewShards: 16}
)

// newDir creates a data directory with m and closes it.
func newDir(t *testing.T, m Meta) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	d, err := Create(vfs.Default, dir, m, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return dir
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCreateOpen(t *testing.T) {
	dir := newDir(t, local8)
	if got, want := strings.Join(names(t, dir), " "), "LOCK fusee.meta"; got != want {
		t.Errorf("directory holds %q, want %q", got, want)
	}
	want, _ := local8.Marshal()
	if got := readFile(t, filepath.Join(dir, FileName)); got != string(want) {
		t.Errorf("fusee.meta = %q, want %q", got, want)
	}
	d, err := Open(vfs.Default, dir, Options{Log: LogShared})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if d.Meta() != local8 || d.Path() != dir {
		t.Errorf("Open = %s %+v, want %s %+v", d.Path(), d.Meta(), dir, local8)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := newDir(t, local8)
	_, err := Create(vfs.Default, dir, Meta{Format: FormatLocal, Log: LogShared, Shards: 2}, nil)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing directory: got %v, want fs.ErrExist", err)
	}
	want := dir + " is already a fusee data directory (it has a fusee.meta); refusing to overwrite it: file already exists"
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if m, _ := Read(vfs.Default, dir); m != local8 {
		t.Errorf("after a refused Create, meta = %+v, want %+v", m, local8)
	}
	// The refusal released the lock.
	l, err := Lock(vfs.Default, dir)
	if err != nil {
		t.Fatalf("Lock after refused Create: %v", err)
	}
	l.Unlock()
}

func TestCreateExistingEmptyDir(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(vfs.Default, dir, local8, nil)
	if err != nil {
		t.Fatalf("Create in an existing empty directory: %v", err)
	}
	d.Close()
}

func TestCreateInvalidMeta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Create(vfs.Default, dir, Meta{Format: FormatLocal, Log: 3, Shards: 2000}, nil); err == nil {
		t.Fatal("Create with shards=2000 succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an invalid Create made the directory: %v", err)
	}
}

func TestCreateMissingParent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	_, err := Create(vfs.Default, dir, local8, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create under a missing parent: got %v, want fs.ErrNotExist", err)
	}
}

func TestReadMissing(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "gone")
	_, err := ReadAny(vfs.Default, missing)
	if want := "data directory " + missing + ": stat " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("ReadAny(vfs.Default, missing dir):\n got %v\nwant %s", err, want)
	}
	_, err = ReadAny(vfs.Default, root)
	if want := root + " is not a fusee data directory: it has no fusee.meta: open " + filepath.Join(root, FileName) + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("ReadAny(vfs.Default, dir without meta):\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadAny(vfs.Default, dir without meta) = %v, want fs.ErrNotExist", err)
	}
}

func TestReadMalformedNamesPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("format=local\nlog=3\nshards=2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(vfs.Default, dir)
	want := path + ":3: shards=2000 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"
	if err == nil || err.Error() != want {
		t.Errorf("Read:\n got %v\nwant %s", err, want)
	}
	if _, err := Open(vfs.Default, dir, Options{}); err == nil || err.Error() != want {
		t.Errorf("Open:\n got %v\nwant %s", err, want)
	}
}

func TestReadTooLarge(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("# padding\n", maxFileSize/10+1)
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	var fe *FileError
	if _, err := ReadAny(vfs.Default, dir); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "far larger than any fusee.meta") {
		t.Errorf("ReadAny(vfs.Default, large file) = %v", err)
	}
}

// TestWriteReplaces rewrites the file many times: each time it is whole,
// and no temporary file is left beside it.
func TestWriteReplaces(t *testing.T) {
	dir := newDir(t, local8)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for n := 1; n <= 50; n++ {
		m := Meta{Format: FormatLocal, Log: LogShared, Shards: n}
		if n%2 == 0 {
			m = Meta{Format: Switching, Log: LogShared, Shards: n, OldShards: n - 1, NewShards: n}
		}
		if err := d.Write(m); err != nil {
			t.Fatalf("Write(%+v): %v", m, err)
		}
		want, _ := m.Marshal()
		if got := readFile(t, filepath.Join(dir, FileName)); got != string(want) {
			t.Fatalf("after Write(%+v): %q, want %q", m, got, want)
		}
		if got, err := ReadAny(vfs.Default, dir); err != nil || got != m || d.Meta() != m {
			t.Fatalf("ReadAny = %+v, %v; Meta() = %+v; want %+v", got, err, d.Meta(), m)
		}
		if got := strings.Join(names(t, dir), " "); got != "LOCK fusee.meta" {
			t.Fatalf("directory holds %q after Write", got)
		}
	}
}

// TestWriteInterrupted stops a write after the temporary file is written
// and before the rename: fusee.meta is still the old file, whole, the new
// bytes sit complete in the temporary file, and the failed write removes it.
func TestWriteInterrupted(t *testing.T) {
	dir := newDir(t, local8)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	old := readFile(t, filepath.Join(dir, FileName))
	want, _ := switching.Marshal()
	stop := errors.New("stopped before rename")
	testHookBeforeRename = func(tmp string) error {
		if filepath.Dir(tmp) != dir {
			t.Errorf("temporary file %s is not in %s", tmp, dir)
		}
		if got := readFile(t, tmp); got != string(want) {
			t.Errorf("temporary file holds %q, want %q", got, want)
		}
		if got := readFile(t, filepath.Join(dir, FileName)); got != old {
			t.Errorf("fusee.meta changed before the rename: %q", got)
		}
		return stop
	}
	defer func() { testHookBeforeRename = nil }()

	if err := d.Write(switching); !errors.Is(err, stop) {
		t.Fatalf("Write = %v, want %v", err, stop)
	}
	if got := readFile(t, filepath.Join(dir, FileName)); got != old {
		t.Errorf("after a failed Write fusee.meta = %q, want the old %q", got, old)
	}
	if d.Meta() != local8 {
		t.Errorf("after a failed Write Meta() = %+v, want %+v", d.Meta(), local8)
	}
	if got := strings.Join(names(t, dir), " "); got != "LOCK fusee.meta" {
		t.Errorf("directory holds %q after a failed Write", got)
	}
}

// TestWriteRemovesLeftovers: a temporary file left by a writer that
// crashed before its rename is removed by the next write.
func TestWriteRemovesLeftovers(t *testing.T) {
	dir := newDir(t, local8)
	if err := os.WriteFile(filepath.Join(dir, ".fusee.meta8675309"), []byte("format=lo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Read(vfs.Default, dir); err != nil || m != local8 {
		t.Fatalf("Read with a leftover = %+v, %v", m, err)
	}
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(local8); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, dir), " "); got != "LOCK fusee.meta" {
		t.Errorf("directory holds %q, want the leftover gone", got)
	}
}

func TestWriteInvalidLeavesFile(t *testing.T) {
	dir := newDir(t, local8)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(Meta{Format: FormatLocal, Log: 3, Shards: 0}); err == nil {
		t.Fatal("Write(shards=0) succeeded")
	}
	if m, err := ReadAny(vfs.Default, dir); err != nil || m != local8 {
		t.Errorf("after an invalid Write: %+v, %v", m, err)
	}
}

func TestWriteAfterClose(t *testing.T) {
	dir := newDir(t, local8)
	d, err := Open(vfs.Default, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := d.Write(local8); err == nil {
		t.Error("Write after Close succeeded")
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

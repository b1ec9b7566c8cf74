package sim

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/meta"
)

func TestGenTemp(t *testing.T) {
	for path, want := range map[string]string{
		"/a/data.gen-tmp-0123456789abcdef":        "/a/data",
		"data.gen-tmp-0123456789abcdef/":          "data",
		"/a/x.gen-tmp-y.gen-tmp-00000000000000ff": "/a/x.gen-tmp-y",
		"/a/data.gen-tmp-0123":                    "",
		"/a/data.gen-tmp-0123456789abcdeg":        "",
		"/a/.gen-tmp-0123456789abcdef":            "",
		"/a/data":                                 "",
	} {
		got, ok := GenTemp(path)
		if ok != (want != "") || got != want {
			t.Errorf("GenTemp(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}

// A stale temporary directory of the same target is removed; one whose
// lock is held (a gen running now) and those of other targets are not.
func TestRemoveStaleGenTemps(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	stale := dir + genTmpInfix + "00112233445566aa"
	running := dir + genTmpInfix + "00112233445566bb"
	other := filepath.Join(parent, "other"+genTmpInfix+"00112233445566cc")
	notOurs := dir + genTmpInfix + "notours"
	orphan := dir + genTmpInfix + "00112233445566dd" + scratchSuffix // its directory is gone
	for _, d := range []string{stale, running, other, notOurs, stale + scratchSuffix, running + scratchSuffix, orphan} {
		if err := os.MkdirAll(filepath.Join(d, "shards"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := meta.Lock(vfs.Default, running)
	if err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStaleGenTemps(vfs.Default, dir)
	sort.Strings(removed)
	if err != nil || len(removed) != 2 || removed[0] != stale || removed[1] != orphan {
		t.Fatalf("removed %v, %v; want only %s and %s", removed, err, stale, orphan)
	}
	for _, d := range []string{running, other, notOurs, running + scratchSuffix} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range []string{stale, stale + scratchSuffix, orphan} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	removed, err = RemoveStaleGenTemps(vfs.Default, dir)
	if err != nil || len(removed) != 1 || removed[0] != running {
		t.Fatalf("after unlock: removed %v, %v; want %s", removed, err, running)
	}
}

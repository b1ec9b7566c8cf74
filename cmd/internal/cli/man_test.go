package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// docs/man holds exactly the pages `fusee man` writes now: a change to a
// command's help, flags or examples that was not followed by
// `go run ./cmd/fusee man docs/man` fails here.
func TestManPagesAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runFusee(t, nil, "man", dir); code != 0 {
		t.Fatalf("fusee man: exit %d\n%s", code, errOut)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	have, _ := filepath.Glob("../../../docs/man/*.1")
	names := func(paths []string) []string {
		var n []string
		for _, p := range paths {
			n = append(n, filepath.Base(p))
		}
		sort.Strings(n)
		return n
	}
	if len(want) < 20 {
		t.Fatalf("fusee man wrote only %d pages", len(want))
	}
	if w, h := names(want), names(have); len(w) != len(h) {
		t.Fatalf("docs/man has %d pages, fusee man writes %d: regenerate with `go run ./cmd/fusee man docs/man` (and remove stale pages)\nhave %v\nwant %v", len(h), len(w), h, w)
	}
	for _, p := range want {
		got, _ := os.ReadFile(p)
		kept, err := os.ReadFile(filepath.Join("../../../docs/man", filepath.Base(p)))
		if err != nil || !bytes.Equal(got, kept) {
			t.Errorf("docs/man/%s is stale or missing: regenerate with `go run ./cmd/fusee man docs/man`", filepath.Base(p))
		}
	}
}

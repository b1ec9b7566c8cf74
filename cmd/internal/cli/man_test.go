package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// Each page has its own title and keeps its <placeholders>: markdown read
// them as HTML tags and dropped them ("fusee reshard  [] [flags]", "under
// /reshard.new"), and every page was titled FUSEE(1).
func TestManPagesKeepPlaceholdersAndTitles(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runFusee(t, nil, "man", dir); code != 0 {
		t.Fatalf("fusee man: exit %d\n%s", code, errOut)
	}
	page, err := os.ReadFile(filepath.Join(dir, "fusee-reshard.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "FUSEE-RESHARD" "1"`, `fusee reshard <dir> [<shards>] [flags]`,
		"under <dir>/reshard.new", "With no <shards>, reshard", "as <dir>/reshard.kept, so --undo"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("fusee-reshard.1 lacks %q", want)
		}
	}
	bash, _ := os.ReadFile(filepath.Join(dir, "fusee-completion-bash.1"))
	if !strings.Contains(string(bash), "source <(fusee completion bash)") || strings.Contains(string(bash), `\<`) {
		t.Errorf("fusee-completion-bash.1: the code line must keep its text unescaped")
	}
	root, _ := os.ReadFile(filepath.Join(dir, "fusee.1"))
	if !strings.Contains(string(root), `.TH "FUSEE" "1"`) {
		t.Errorf("fusee.1 is not titled FUSEE(1)")
	}
}

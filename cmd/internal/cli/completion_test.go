package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The completion scripts are there for every shell cobra supports, and the
// dynamic completions read the directory and the ring file named before.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errOut, code := runFusee(t, nil, "completion", sh)
		if code != 0 || !strings.Contains(out, "fusee") {
			t.Errorf("completion %s: exit %d, %d bytes\n%s", sh, code, len(out), errOut)
		}
	}
	help, _, _ := runFusee(t, nil, "--help")
	if !strings.Contains(help, "\n  completion  ") || !strings.Contains(help, "\n  version  ") {
		t.Errorf("--help does not list completion and version:\n%s", help)
	}

	dir := genDir(t) // 3 shards
	out, _, _ := runFusee(t, nil, "__complete", "reshard", dir, "")
	for _, want := range []string{"1\thalf of the current 3", "2\tone fewer than the current 3", "4\tone more than the current 3", "6\tdouble the current 3", ":4"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("reshard <dir> completion lacks %q:\n%s", want, out)
		}
	}

	ring := filepath.Join(t.TempDir(), "orders.ring")
	if _, errOut, code := runFusee(t, nil, "ring", "init", ring, "--namespace", "orders", "--shards", "8", "--cells", "a,b"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "open-epoch", ring, "--slots", "0-7=c", "--new-cell", "c"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runFusee(t, nil, "ring", "retire", ring, "--epoch", "0", "--force"); code != 0 {
		t.Fatal(errOut)
	}
	out, _, _ = runFusee(t, nil, "__complete", "ring", "mint", ring, "--cell", "")
	for _, want := range []string{"a\tdeclared, holds no shard now", "c\tactive"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("ring mint --cell completion lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runFusee(t, nil, "__complete", "ring", "retire", ring, "--epoch", "")
	if !strings.Contains(out, "0\tretired\n") || !strings.Contains(out, "1\topen\n") {
		t.Errorf("ring retire --epoch completion:\n%s", out)
	}
}

// version and --version print the same line: version, Go, platform.
func TestVersion(t *testing.T) {
	out, _, code := runFusee(t, nil, "version")
	out2, _, code2 := runFusee(t, nil, "--version")
	if code != 0 || code2 != 0 || out != out2 || !strings.HasPrefix(out, "fusee test") || !strings.Contains(out, " go1.") {
		t.Errorf("version: %q (exit %d); --version: %q (exit %d)", out, code, out2, code2)
	}
}

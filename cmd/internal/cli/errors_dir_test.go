package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// genTemplate is the directory genDir copies: generated once per test
// process (twenty tests damage a copy each) and removed by TestMain.
var genTemplate struct {
	once sync.Once
	root string // the temporary directory holding it
	dir  string
	err  error
}

// genDir returns a fresh copy of a small generated data directory with
// three shards (gen --shards 3 --runs 60 --seed 3), which the caller may
// damage.
func genDir(t *testing.T) string {
	t.Helper()
	g := &genTemplate
	g.once.Do(func() {
		if g.root, g.err = os.MkdirTemp("", "fusee-cli-gen-"); g.err != nil {
			return
		}
		g.dir = filepath.Join(g.root, "data")
		if _, errOut, code := runFusee(t, nil, "gen", g.dir, "--shards", "3", "--runs", "60", "--seed", "3"); code != 0 {
			g.err = fmt.Errorf("gen: exit %d\n%s", code, errOut)
		}
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(g.dir)); err != nil {
		t.Fatalf("copying the generated directory: %v", err)
	}
	return dir
}

// removeGenTemplate runs the tests, then removes genDir's template.
type removeGenTemplate struct{ m *testing.M }

func (r removeGenTemplate) Run() int {
	code := r.m.Run()
	if genTemplate.root != "" {
		os.RemoveAll(genTemplate.root)
	}
	return code
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("nothing matches %s (%v)", pattern, err)
	}
	return m[0]
}

// TestUnreadableDirectories pins what inspect and verify say about a
// directory that cannot be read: what is wrong in an operator's terms,
// naming the file, and the next step, with backup advice only where a
// backup is the answer. verify reports it as its one unreadable finding,
// in text (detail, then the next step as the hint, no nested hints) and in
// JSON, with "1 error" in the summary.
func TestUnreadableDirectories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the path to give fusee
		what   string                                // regexp on the detail
		next   string                                // regexp on the hint
	}{
		{"log cut short", func(t *testing.T, dir string) string {
			if err := os.Truncate(mustGlob(t, filepath.Join(dir, "wal", "*.log")), 1000); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^the write-ahead log \S+/wal/0+1\.log is cut short: it ends at byte 1000, but the shards' checkpoints resume it at offset \d+`,
			`^writes acknowledged after those checkpoints are lost: restore the data directory from a backup$`},
		{"log directory missing", func(t *testing.T, dir string) string {
			if err := os.RemoveAll(filepath.Join(dir, "wal")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^the write-ahead log directory \S+/wal is missing`, `^restore the data directory from a backup$`},
		{"sstable cut short", func(t *testing.T, dir string) string {
			if err := os.Truncate(mustGlob(t, filepath.Join(dir, "shards", "0001", "store", "*.sst")), 100); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^shard store \S+/shards/0001/store is damaged: its file \S+\.sst is 100 bytes, but the store's MANIFEST says \d+`,
			`^restore the data directory from a backup$`},
		{"sstable deleted", func(t *testing.T, dir string) string {
			if err := os.Remove(mustGlob(t, filepath.Join(dir, "shards", "0001", "store", "*.sst"))); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^shard store \S+/shards/0001/store is damaged: its file \d+\.sst, which the store's MANIFEST lists, is missing$`,
			`^restore the data directory from a backup$`},
		{"shard store deleted", func(t *testing.T, dir string) string {
			if err := os.RemoveAll(filepath.Join(dir, "shards", "0002")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^shard store \S+/shards/0002/store is missing or empty: fusee.meta says 3 shards, \S+/shards holds 2$`,
			`^the directory is incomplete, a store deleted or a copy stopped early: restore the data directory from a backup$`},
		{"fusee.meta says fewer shards", func(t *testing.T, dir string) string {
			writeMeta(t, dir, 2)
			return dir
		}, `^\S+/fusee.meta says shards=2, but \S+ holds 3 shard stores \(shards/0000 to shards/0002\) whose checkpoints say 3 shards$`,
			`^fusee.meta is the likely culprit, .*set shards=3 again$`},
		{"fusee.meta says more shards", func(t *testing.T, dir string) string {
			writeMeta(t, dir, 5)
			return dir
		}, `^\S+/fusee.meta says shards=5, but \S+ holds 3 shard stores`, `^fusee.meta is the likely culprit`},
		{"a file given as the directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "fusee.meta")
		}, `^\S+/fusee.meta is a file, not a directory$`, `^give the data directory, the directory that holds fusee.meta$`},
		{"no such directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "nope")
		}, `^data directory \S+/nope does not exist$`, `^check the path`},
		{"empty directory", func(t *testing.T, dir string) string {
			empty := filepath.Join(dir, "empty")
			if err := os.Mkdir(empty, 0o755); err != nil {
				t.Fatal(err)
			}
			return empty
		}, `^\S+/empty is empty: it is not a fusee data directory$`, `^give the engine's data directory`},
		{"bad fusee.meta", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "fusee.meta"), []byte("garbage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^\S+/fusee.meta:1: "garbage" is not key=value`, `^fusee.meta is written only by fusee: restore it from a backup`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.damage(t, genDir(t))
			what, next := regexp.MustCompile(tc.what), regexp.MustCompile(tc.next)

			out, errOut, code := runFusee(t, nil, "verify", "--json", path)
			ls := lines(out)
			var f struct{ Type, Kind, Severity, Detail, Hint string }
			var sum map[string]any
			if code != 1 || len(ls) != 2 || json.Unmarshal([]byte(ls[0]), &f) != nil || json.Unmarshal([]byte(ls[1]), &sum) != nil {
				t.Fatalf("verify --json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if f.Kind != "unreadable" || !what.MatchString(f.Detail) || !next.MatchString(f.Hint) {
				t.Errorf("verify --json finding:\n detail %q\n want   %s\n hint   %q\n want   %s", f.Detail, tc.what, f.Hint, tc.next)
			}
			if sum["type"] != "summary" || sum["unreadable"] != true || sum["ok"] != false || sum["errors"] != 1.0 {
				t.Errorf("verify --json summary: %s", ls[1])
			}

			out, _, code = runFusee(t, nil, "verify", path)
			ls = lines(out)
			if code != 1 || len(ls) != 2 || ls[0] != "directory: unreadable: "+f.Detail+" ("+f.Hint+")" ||
				ls[1] != "unreadable: 1 error, 0 warnings, 0 info; nothing else was checked" {
				t.Errorf("verify: exit %d\n%s", code, out)
			}
			if strings.Contains(f.Hint, "(") {
				t.Errorf("verify: a hint inside the hint: %q", f.Hint)
			}

			for _, cmd := range []string{"inspect", "dump"} {
				out, errOut, code := runFusee(t, nil, cmd, path)
				if want := "fusee: " + f.Detail + "; " + f.Hint + "\n"; code != 1 || out != "" || errOut != want {
					t.Errorf("%s: exit %d\nstderr: %q\nwant:   %q", cmd, code, errOut, want)
				}
			}
		})
	}
}

func writeMeta(t *testing.T, dir string, shards int) {
	t.Helper()
	text := "format=local\nlog=3\nshards=" + strconv.Itoa(shards) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "fusee.meta"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

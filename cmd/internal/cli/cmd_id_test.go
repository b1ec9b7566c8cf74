package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/idcodec"
	"github.com/fusee-dev/fusee/meta"
)

// runFusee runs fusee in-process with exactly env as its environment.
func runFusee(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), "test", args, strings.NewReader(""), &out, &errb, env)
	return out.String(), errb.String(), code
}

func writeConfig(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// TestConfigPrecedence: flag > FUSEE_* > config file (the command's own
// section over the top level) > default, shown with id mint --count.
func TestConfigPrecedence(t *testing.T) {
	top := writeConfig(t, "top.yaml", "count: 3\n")
	scoped := writeConfig(t, "scoped.yaml", "count: 3\nid:\n  mint:\n    count: 4\n")
	other := writeConfig(t, "other.toml", "count = 7\n")
	mint := []string{"id", "mint", "--namespace", "orders", "--epoch", "1", "--owned", "0"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"default", nil, nil, 1},
		{"config top level", nil, []string{"--config", top}, 3},
		{"config command section beats top level", nil, []string{"--config", scoped}, 4},
		{"FUSEE_CONFIG names the file", []string{"FUSEE_CONFIG=" + scoped}, nil, 4},
		{"--config beats FUSEE_CONFIG", []string{"FUSEE_CONFIG=" + scoped}, []string{"--config", other}, 7},
		{"environment beats config", []string{"FUSEE_COUNT=5"}, []string{"--config", scoped}, 5},
		{"empty environment variable is unset", []string{"FUSEE_COUNT="}, []string{"--config", scoped}, 4},
		{"last environment entry wins", []string{"FUSEE_COUNT=5", "FUSEE_COUNT=2"}, nil, 2},
		{"flag beats environment and config", []string{"FUSEE_COUNT=5"}, []string{"--config", scoped, "--count", "6"}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.args...), mint...)
			out, errs, code := runFusee(t, tc.env, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := len(lines(out)); got != tc.want {
				t.Errorf("minted %d ids, want %d:\n%s", got, tc.want, out)
			}
		})
	}
}

// TestConfigFromProcessEnvironment: Main's path, where the environment is
// the process's (os.Environ()).
func TestConfigFromProcessEnvironment(t *testing.T) {
	cfg := writeConfig(t, "fusee.yaml", "id:\n  mint:\n    count: 4\n")
	t.Setenv("FUSEE_CONFIG", cfg)
	out, errs, code := runFusee(t, os.Environ(), "id", "mint", "--namespace", "orders", "--epoch", "1", "--owned", "0")
	if code != ExitOK || len(lines(out)) != 4 {
		t.Fatalf("exit %d, %d ids, want 4: %s", code, len(lines(out)), errs)
	}
	t.Setenv("FUSEE_COUNT", "2")
	out, _, _ = runFusee(t, os.Environ(), "id", "mint", "--namespace", "orders", "--epoch", "1", "--owned", "0")
	if len(lines(out)) != 2 {
		t.Errorf("with FUSEE_COUNT=2: %d ids, want 2", len(lines(out)))
	}
}

// TestConfigSuppliesRequiredFlags: required flags may come from the
// config file, lists included.
func TestConfigSuppliesRequiredFlags(t *testing.T) {
	cfg := writeConfig(t, "fusee.yaml", "id:\n  mint:\n    namespace: orders\n    cell: eu-1\n    epoch: 2\n    owned: [3, 8]\n    count: 40\n")
	out, errs, code := runFusee(t, nil, "--config", cfg, "id", "mint")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, id := range lines(out) {
		p := idcodec.Parse(id)
		if p.Namespace != "orders" || p.Cell != "eu-1" || p.Epoch != 2 || (p.Shard != 3 && p.Shard != 8) {
			t.Errorf("minted %q", id)
		}
	}
	if n := len(lines(out)); n != 40 {
		t.Errorf("minted %d ids, want 40", n)
	}
}

// TestConfigScopedToCommand: a setting under one command's section does
// not reach another command with a flag of the same name.
func TestConfigScopedToCommand(t *testing.T) {
	cfg := writeConfig(t, "fusee.yaml", "id:\n  shard:\n    json: true\n")
	out, _, _ := runFusee(t, nil, "--config", cfg, "id", "shard", "a", "7")
	if !strings.HasPrefix(out, "{") {
		t.Errorf("id shard with id.shard.json: %q, want JSON", out)
	}
	out, _, _ = runFusee(t, nil, "--config", cfg, "id", "parse", "ns.e0.s0.x")
	if strings.HasPrefix(out, "{") {
		t.Errorf("id parse picked up id.shard.json: %q", out)
	}
}

func TestConfigErrors(t *testing.T) {
	bad := writeConfig(t, "bad.yaml", "count: [\n")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unreadable config", nil, []string{"--config", bad}, "fusee: reading config file " + bad},
		{"missing config", nil, []string{"--config", "/nonexistent/fusee.yaml"}, "fusee: reading config file /nonexistent/fusee.yaml"},
		{"bad environment value", []string{"FUSEE_COUNT=many"}, nil, `fusee: environment variable FUSEE_COUNT: invalid value "many" for --count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "id", "mint", "--namespace", "orders", "--epoch", "1", "--owned", "0")
			_, errs, code := runFusee(t, tc.env, args...)
			if code != ExitUsage || !strings.HasPrefix(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, ExitUsage, tc.want)
			}
		})
	}
}

func TestIDParseOutput(t *testing.T) {
	out, _, code := runFusee(t, nil, "id", "parse", "n s.c\u00a0x.e1.s2.a\tb")
	want := "namespace  n s\ncell       \"\\u00a0x\"\nepoch      1\nshard      2\nulid       \"a\\tb\"\n"
	if code != ExitOK || out != want {
		t.Errorf("exit %d, output:\n%q\nwant\n%q", code, out, want)
	}
}

func TestIDMintMatchesShardFor(t *testing.T) {
	out, errs, code := runFusee(t, nil, "id", "mint", "--namespace", "orders", "--epoch", "9", "--owned", "3,8,5", "--count", "300")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	owned := []int64{3, 8, 5}
	var ulids []string
	for _, id := range lines(out) {
		p := idcodec.Parse(id)
		if want := owned[idcodec.ShardFor(p.ULID, 3)]; p.Shard != want || p.Epoch != 9 {
			t.Errorf("%s: shard %d, want %d", id, p.Shard, want)
		}
		ulids = append(ulids, p.ULID)
	}
	for i := 1; i < len(ulids); i++ {
		if ulids[i-1] >= ulids[i] {
			t.Errorf("ulid %d (%s) does not sort after %s", i, ulids[i], ulids[i-1])
		}
	}
}

func TestMetaExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&meta.InUseError{Dir: "/d"}, ExitInUse},
		{fmt.Errorf("opening: %w", &meta.InUseError{Dir: "/d"}), ExitInUse},
		{&meta.SwitchingError{Dir: "/d", OldShards: 8, NewShards: 16}, ExitSwitching},
		{fmt.Errorf("opening: %w", &meta.SwitchingError{Dir: "/d"}), ExitSwitching},
		{&meta.LogError{Dir: "/d", Have: 2, Want: 3}, ExitFailure},
		{&meta.FileError{Path: "/d/fusee.meta", Line: 3, Msg: "x"}, ExitFailure},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

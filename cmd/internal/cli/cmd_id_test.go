package cli

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
// section over the top level) > default, shown with id shard --json.
func TestConfigPrecedence(t *testing.T) {
	top := writeConfig(t, "top.yaml", "json: true\n")
	scoped := writeConfig(t, "scoped.yaml", "json: true\nid:\n  shard:\n    json: false\n")
	other := writeConfig(t, "other.toml", "json = true\n")
	shard := []string{"id", "shard", "abc", "4"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		json bool
	}{
		{"default", nil, nil, false},
		{"config top level", nil, []string{"--config", top}, true},
		{"config command section beats top level", nil, []string{"--config", scoped}, false},
		{"FUSEE_CONFIG names the file", []string{"FUSEE_CONFIG=" + top}, nil, true},
		{"--config beats FUSEE_CONFIG", []string{"FUSEE_CONFIG=" + scoped}, []string{"--config", other}, true},
		{"environment beats config", []string{"FUSEE_JSON=true"}, []string{"--config", scoped}, true},
		{"empty environment variable is unset", []string{"FUSEE_JSON="}, []string{"--config", top}, true},
		{"last environment entry wins", []string{"FUSEE_JSON=true", "FUSEE_JSON=false"}, nil, false},
		{"flag beats environment and config", []string{"FUSEE_JSON=true"}, []string{"--config", top, "--json=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.args...), shard...)
			out, errs, code := runFusee(t, tc.env, args...)
			if code != ExitOK || errs != "" {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := strings.HasPrefix(out, "{"); got != tc.json {
				t.Errorf("JSON %v, want %v:\n%s", got, tc.json, out)
			}
		})
	}
}

// TestConfigFromProcessEnvironment: Main's path, where the environment is
// the process's (os.Environ()).
func TestConfigFromProcessEnvironment(t *testing.T) {
	cfg := writeConfig(t, "fusee.yaml", "id:\n  shard:\n    json: true\n")
	t.Setenv("FUSEE_CONFIG", cfg)
	out, errs, code := runFusee(t, os.Environ(), "id", "shard", "abc", "4")
	if code != ExitOK || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d, %q, want JSON: %s", code, out, errs)
	}
	t.Setenv("FUSEE_JSON", "false")
	out, _, _ = runFusee(t, os.Environ(), "id", "shard", "abc", "4")
	if strings.HasPrefix(out, "{") {
		t.Errorf("with FUSEE_JSON=false: %q, want text", out)
	}
}

// TestSettingsNeverSupplyTargets: the environment and a config file supply
// preferences only. A command's target or a choice with consequences (a
// shard count, an output file, ids to mint) must be on the command line:
// from anywhere else it is ignored, with a warning, and a required flag
// stays missing.
func TestSettingsNeverSupplyTargets(t *testing.T) {
	dir := t.TempDir()
	ring := dir + "/o.ring"
	_, errs, code := runFusee(t, []string{"FUSEE_SHARDS=3"}, "ring", "init", ring, "--namespace", "o", "--cells", "a")
	if code != ExitUsage || !strings.Contains(errs, "warning: FUSEE_SHARDS is ignored: --shards is given only on the command line\n") ||
		!strings.Contains(errs, "fusee: --shards is required") {
		t.Fatalf("ring init with FUSEE_SHARDS: exit %d\n%s", code, errs)
	}
	if _, errs, code := runFusee(t, nil, "ring", "init", ring, "--namespace", "o", "--shards", "4", "--cells", "a"); code != 0 {
		t.Fatal(errs)
	}
	plan := dir + "/p.plan"
	_, errs, code = runFusee(t, []string{"FUSEE_OUTPUT=" + plan, "FUSEE_ADD_CELL=b"}, "ring", "plan", ring, "--rebalance", "--weights", "a=1")
	if _, err := os.Stat(plan); err == nil || !strings.Contains(errs, "FUSEE_OUTPUT is ignored") {
		t.Errorf("ring plan with FUSEE_OUTPUT: exit %d, plan written: %v\n%s", code, err == nil, errs)
	}
	cfg := writeConfig(t, "fusee.yaml", "shards: 3\nid:\n  mint:\n    namespace: orders\n    epoch: 2\n    owned: [3, 8]\n    count: 40\n")
	_, errs, code = runFusee(t, nil, "--config", cfg, "id", "mint")
	if code != ExitUsage || !strings.Contains(errs, `setting "id.mint.count" is ignored`) || !strings.Contains(errs, `setting "shards" is ignored`) ||
		!strings.Contains(errs, "fusee: --namespace is required") {
		t.Errorf("id mint from a config file: exit %d\n%s", code, errs)
	}
}

// TestConfigurableSettingsDocumented: the README's Settings section names
// exactly the settings that may come from the environment or a config
// file, and only those flags take them.
func TestConfigurableSettingsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### Settings")
	section, _, _ = strings.Cut(section, "\n### ")
	_, list, ok := strings.Cut(section, "Configurable:")
	if !ok {
		t.Fatal("README's Settings section has no 'Configurable:' list")
	}
	list, _, _ = strings.Cut(list, ".")
	documented := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		documented[strings.Trim(strings.TrimSpace(item), "`-")] = true
	}
	if !maps.Equal(documented, configurable) {
		t.Errorf("README lists %v as configurable, the code %v", slices.Sorted(maps.Keys(documented)), slices.Sorted(maps.Keys(configurable)))
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
		{"bad environment value", []string{"FUSEE_JSON=many"}, nil, `fusee: environment variable FUSEE_JSON: invalid value "many" for --json`},
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

// An error quotes an overlong token cut, saying how much was left out,
// so that the message stays one short line.
func TestErrorsCutLongTokens(t *testing.T) {
	long := strings.Repeat("x", 100000)
	_, errOut, code := runFusee(t, nil, "id", "format", "--namespace", long+".a", "--epoch", "1", "--shard", "1", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
	if code != ExitUsage || len(errOut) > 400 || !strings.Contains(errOut, "more bytes)") {
		t.Errorf("exit %d, %d bytes of stderr:\n%.600s", code, len(errOut), errOut)
	}
	for _, s := range []string{"short message", strings.Repeat("wörd ", 100) + strings.Repeat("é", 100)} {
		if got := cutLongTokens(s); got != s {
			t.Errorf("cutLongTokens(%q) = %q, want it unchanged", s, got)
		}
	}
	got := cutLongTokens("token " + strings.Repeat("é", 500) + " end")
	if !utf8.ValidString(got) || !strings.HasSuffix(got, " end") || len(got) > 140 {
		t.Errorf("cut: %q", got)
	}
}

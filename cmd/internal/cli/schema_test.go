package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
)

// jsonSchemas maps each command with a --json flag to its schema in
// docs/schema, and whether it prints JSON lines (one value per line)
// rather than one value.
var jsonSchemas = map[string]struct {
	file  string
	lines bool
}{
	"gen":                 {"gen.json", false},
	"version":             {"version.json", false},
	"inspect":             {"inspect.json", false},
	"verify":              {"verify.json", true},
	"sim drive":           {"sim-drive.json", false},
	"id parse":            {"id.json", false},
	"id format":           {"id.json", false},
	"id mint":             {"id.json", true},
	"id shard":            {"id-shard.json", false},
	"ring show":           {"ring-show.json", false},
	"ring plan":           {"ring-plan.json", false},
	"ring validate":       {"ring-validate.json", false},
	"ring resolve":        {"ring-resolve.json", false},
	"ring active-cells":   {"ring-active-cells.json", false},
	"ring mint":           {"id.json", true},
	"ring init":           {"ring-write.json", false},
	"ring open-epoch":     {"ring-write.json", false},
	"ring retire":         {"ring-write.json", false},
	"ring import":         {"ring-write.json", false},
	"ring pull":           {"ring-write.json", false},
	"ring push":           {"ring-write.json", false},
	"ring bindings":       {"ring-bindings.json", false},
	"ring bind":           {"ring-bind.json", false},
	"ring unbind":         {"ring-bindings-change.json", false},
	"ring prune-bindings": {"ring-bindings-change.json", false},
	// reshard's and upgrade's report are one type (docs/reshard.md §9);
	// the plan file is specified in docs/reshard.md.
	"reshard": {"reshard-report.json", false},
	"upgrade": {"reshard-report.json", false},
}

// Every command that has --json has a schema here (or a named reason).
func TestEveryJSONCommandHasASchema(t *testing.T) {
	root := NewRoot(newIO(nil, &bytes.Buffer{}, &bytes.Buffer{}, nil), "test", nil)
	var walk func(c *cobra.Command)
	var missing []string
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("json") != nil {
			path := strings.TrimPrefix(c.CommandPath(), "fusee ")
			if _, ok := jsonSchemas[path]; !ok {
				missing = append(missing, path)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("commands with --json and no schema in jsonSchemas: %v", missing)
	}
}

// Real output of every command with --json validates against its schema
// in docs/schema; the schemas forbid fields they do not list, so a new or
// renamed field fails here until the schema documents it.
func TestJSONOutputMatchesSchemas(t *testing.T) {
	c := jsonschema.NewCompiler()
	schemas := map[string]*jsonschema.Schema{}
	files, _ := filepath.Glob("../../../docs/schema/*.json")
	if len(files) == 0 {
		t.Fatal("no schemas in docs/schema")
	}
	for _, f := range files {
		sch, err := c.Compile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		schemas[filepath.Base(f)] = sch
	}
	dir := t.TempDir()
	t.Chdir(dir)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), "test", args, strings.NewReader(""), &out, &errb, nil); code != 0 && code != ExitFailure {
			t.Fatalf("fusee %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	seen := map[string]bool{}
	check := func(cmd string, out string) {
		t.Helper()
		seen[cmd] = true
		spec := jsonSchemas[cmd]
		sch := schemas[spec.file]
		if sch == nil {
			t.Fatalf("%s: no schema %q", cmd, spec.file)
		}
		values := []string{out}
		if spec.lines {
			values = nil
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				values = append(values, sc.Text())
			}
		}
		if len(values) == 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("%s printed nothing", cmd)
		}
		for _, v := range values {
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(v))
			if err != nil {
				t.Fatalf("%s: not JSON: %v\n%s", cmd, err, v)
			}
			if err := sch.Validate(doc); err != nil {
				t.Errorf("%s output does not match docs/schema/%s: %v\n%s", cmd, spec.file, err, v)
			}
		}
	}
	check("gen", run("gen", "d", "--shards", "3", "--runs", "60", "--json"))
	check("inspect", run("inspect", "d", "--json"))
	check("version", run("version", "--json"))
	check("verify", run("verify", "d", "--json"))
	check("verify", run("verify", "nope", "--json")) // the unreadable finding
	check("sim drive", run("sim", "drive", "d", "--json"))
	check("id parse", run("id", "parse", "--json", "orders.ceu-1.e3.s17.01ARZ3NDEKTSV4RRFFQ69G5FAV"))
	check("id parse", run("id", "parse", "--json", "wfi_legacy"))
	check("id format", run("id", "format", "--json", "--namespace", "orders", "--epoch", "3", "--shard", "17", "01ARZ3NDEKTSV4RRFFQ69G5FAV"))
	check("id mint", run("id", "mint", "--json", "--namespace", "orders", "--epoch", "3", "--owned", "3,8", "--count", "3"))
	check("id shard", run("id", "shard", "--json", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "16"))
	check("ring init", run("ring", "init", "r.ring", "--namespace", "orders", "--shards", "8", "--cells", "a,b", "--json"))
	check("ring plan", run("ring", "plan", "r.ring", "--split", "a:c", "-o", "p.plan", "--json"))
	check("ring open-epoch", run("ring", "open-epoch", "r.ring", "--plan", "p.plan", "--json"))
	check("ring show", run("ring", "show", "r.ring", "--json"))
	check("ring validate", run("ring", "validate", "r.ring", "--json"))
	check("ring active-cells", run("ring", "active-cells", "r.ring", "--json"))
	minted := run("ring", "mint", "r.ring", "--cell", "c", "--json", "--count", "2")
	check("ring mint", minted)
	check("ring resolve", run("ring", "resolve", "r.ring", "orders.cc.e1.s2.01ARZ3NDEKTSV4RRFFQ69G5FAV", "wfi_legacy", "--json"))
	check("ring retire", run("ring", "retire", "r.ring", "--epoch", "0", "--force", "--json"))
	check("ring init", run("ring", "init", "dry.ring", "--namespace", "orders", "--shards", "4", "--cells", "a", "--dry-run", "--json"))
	if err := os.WriteFile("epochs.json", []byte(`{"currentEpoch":0,"revision":1,"epochs":{"0":{"status":"OPEN","ring":[{"shard":0,"cellId":"a"},{"shard":1,"cellId":"a"}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	check("ring import", run("ring", "import", "imp.ring", "--from", "epochs.json", "--namespace", "orders", "--json"))
	check("ring bind", run("ring", "bind", "r.ring", "--cell", "z", "--fingerprint", "db-z", "--json"))
	check("ring bind", run("ring", "bind", "r.ring", "--cell", "z", "--json"))
	check("ring bindings", run("ring", "bindings", "r.ring", "--json"))
	if err := os.WriteFile("live.json", []byte(`[{"namespace": "orders", "cell_id": "a"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	check("ring bind", run("ring", "bind", "r.ring", "--cell", "y", "--fingerprint", "db-y", "--json"))
	check("ring unbind", run("ring", "unbind", "r.ring", "--cell", "y", "--live", "live.json", "--json"))
	check("ring prune-bindings", run("ring", "prune-bindings", "r.ring", "--live", "live.json", "--json"))
	check("reshard", run("reshard", "d", "2", "--dry-run", "--json"))
	check("reshard", run("reshard", "d", "5", "--json"))
	check("reshard", run("reshard", "d", "--json"))
	run("gen", "old", "--shards", "2", "--runs", "50", "--log", "2")
	check("upgrade", run("upgrade", "old", "--dry-run", "--json"))
	check("upgrade", run("upgrade", "old", "--json"))
	for cmd, spec := range jsonSchemas {
		if spec.file != "" && !seen[cmd] && cmd != "ring pull" && cmd != "ring push" { // these need etcd: ring_etcd_test.go
			t.Errorf("%s: no output checked against docs/schema/%s", cmd, spec.file)
		}
	}
}

// --progress=json writes JSON lines on stderr (docs/schema/progress.json)
// from every command that shows progress; each line validates, each
// command's last line is final, and stdout keeps its own JSON.
func TestProgressLinesMatchSchema(t *testing.T) {
	sch := compileSchema(t, "progress.json")
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"gen", "d", "--shards", "3", "--runs", "1200"},
		{"gen", "old", "--shards", "2", "--runs", "50", "--log", "2"},
		{"verify", "d"},
		{"dump", "d"},
		{"reshard", "d", "4"},
		{"upgrade", "old"},
		{"sim", "drive", "d"},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), "test", append(args, "--progress=json"), strings.NewReader(""), &out, &errb, nil); code != 0 {
			t.Fatalf("fusee %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		evs := validateJSONLines(t, sch, errb.String())
		cmd := args[0]
		if cmd == "sim" {
			cmd = "sim drive"
		}
		if len(evs) == 0 || !evs[len(evs)-1].Final || evs[len(evs)-1].Command != cmd {
			t.Errorf("fusee %s --progress=json: stderr %q", strings.Join(args, " "), errb.String())
		}
	}
}

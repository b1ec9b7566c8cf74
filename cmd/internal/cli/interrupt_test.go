package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command that runs says what Ctrl-C leaves behind.
func TestEveryCommandHasAnInterruptState(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "fusee ")
		if c.HasSubCommands() {
			for _, sub := range c.Commands() {
				if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
					walk(sub)
				}
			}
			return
		}
		seen[path] = true
		if _, ok := interruptStates[path]; !ok {
			t.Errorf("%q has no entry in interruptStates: say what Ctrl-C leaves behind", path)
		}
	}
	walk(NewRoot(newIO(nil, &bytes.Buffer{}, &bytes.Buffer{}, nil), "test", nil))
	for path := range interruptStates {
		if !seen[path] {
			t.Errorf("interruptStates names %q, which is no command", path)
		}
	}
}

// Ctrl-C (the root context cancelled) is exit 130 and one line saying
// what was interrupted and the state left behind, never "context
// canceled".
func TestInterruptMessages(t *testing.T) {
	dir := makeDataDir(t, 2)
	ring := filepath.Join(t.TempDir(), "o.ring")
	if _, errOut, code := runFusee(t, nil, "ring", "init", ring, "--namespace", "o", "--shards", "4", "--cells", "a"); code != 0 {
		t.Fatal(errOut)
	}
	gen := filepath.Join(t.TempDir(), "new")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", dir}, "fusee: inspect interrupted: nothing was changed\n"},
		{[]string{"verify", dir}, "fusee: verify interrupted: nothing was changed; the findings printed so far are not all of them\n"},
		{[]string{"dump", dir}, "fusee: dump interrupted: nothing was changed; the dump printed so far is incomplete\n"},
		{[]string{"sim", "drive", dir}, "fusee: sim drive interrupted: the directory is consistent (every batch in its log is whole); run the same command again to continue\n"},
		{[]string{"gen", gen, "--shards", "2", "--runs", "10"}, "fusee: gen interrupted; " + gen + " was not created\n"},
		{[]string{"ring", "mint", ring, "--cell", "a"}, "fusee: ring mint interrupted: nothing was changed; the ids printed so far are valid\n"},
		{[]string{"id", "mint", "--namespace", "o", "--epoch", "0", "--owned", "1"}, "fusee: id mint interrupted: nothing was changed; the ids printed so far are valid\n"},
	} {
		var out, errb bytes.Buffer
		code := Run(ctx, "test", tc.args, strings.NewReader(""), &out, &errb, nil)
		if code != ExitCancelled || errb.String() != tc.want {
			t.Errorf("%s: exit %d, want %d\nstderr: %q\nwant:   %q", strings.Join(tc.args, " "), code, ExitCancelled, errb.String(), tc.want)
		}
	}
	if _, err := os.Stat(gen); !os.IsNotExist(err) {
		t.Errorf("an interrupted gen left %s (%v)", gen, err)
	}
}

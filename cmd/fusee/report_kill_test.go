package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
)

// reportLists is a report's two lists (from its --json), an entry a line,
// for comparing reports list for list.
func reportLists(t *testing.T, what, js string) string {
	t.Helper()
	var rep struct {
		Renumbered []json.RawMessage `json:"renumbered_unfinished"`
		Tokens     []json.RawMessage `json:"token_changes"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("%s: not a report: %v\n%.300s", what, err, js)
	}
	var b strings.Builder
	for _, r := range rep.Renumbered {
		fmt.Fprintf(&b, "run %s\n", r)
	}
	for _, r := range rep.Tokens {
		fmt.Fprintf(&b, "token %s\n", r)
	}
	return b.String()
}

// copyDir copies a data directory (cp -a) to a new temporary place.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	return dst
}

// TestKilledAtEachSwitchStep SIGKILLs the real binary at each rename of
// the switch, at the report's steps and at the cleanup, then finishes as
// the operator is told to: the finishing run's report, and the report
// the directory keeps, have the dry run's lists, entry for entry; no
// temporary file is left; inspect never calls the switched directory
// unchanged.
func TestKilledAtEachSwitchStep(t *testing.T) {
	bin := buildFusee(t)
	src, logical := genDisk(t, bin, 3, 200, 21)
	want := reportLists(t, "dry run", mustFusee(t, bin, "reshard", src, "5", "--dry-run", "--json"))
	if !strings.Contains(want, "token ") || !strings.Contains(want, "run ") {
		t.Fatalf("the dry run lists no token or no renumbered run; the test needs both:\n%s", want)
	}
	steps := []string{"old-wal-aside", "old-shards-aside", "new-wal-in", "new-shards-in", "report-carried", "meta-final", "report-named"}
	for _, i := range testtier.Pick(t, len(steps), 4) { // every fourth step in the quick tier, from a daily offset
		step := steps[i]
		t.Run(step, func(t *testing.T) {
			dir := copyDir(t, src)
			cmd := exec.Command(bin, "reshard", dir, "5")
			cmd.Env = append(os.Environ(), killAtEnv+"="+step)
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the reshard was not killed at %s: %v", step, err)
			}
			insp, _, code := fusee(t, bin, "inspect", dir)
			if strings.Contains(insp, "unchanged") {
				t.Errorf("inspect after a kill at %s calls the directory unchanged:\n%s", step, insp)
			}
			if step == "meta-final" && (code != 0 || !strings.Contains(insp, "cleaning up") || !strings.Contains(insp, "5 shards")) {
				t.Errorf("inspect after a kill at the cleanup: exit %d, want cleaning up with 5 shards:\n%s", code, insp)
			}
			out, errs, code := fusee(t, bin, "reshard", dir, "--json")
			if code != 0 {
				t.Fatalf("finishing: exit %d\n%s", code, errs)
			}
			if step != "report-named" {
				// report-named is past the last step: nothing was left
				// to finish, and the finishing run says so.
				if got := reportLists(t, "finishing run", out); got != want {
					t.Errorf("the finishing run's lists differ from the dry run's:\n%s\nwant\n%s", got, want)
				}
			}
			if got := reportLists(t, "inspect --report", mustFusee(t, bin, "inspect", dir, "--report", "--json")); got != want {
				t.Errorf("the kept report's lists differ from the dry run's:\n%s\nwant\n%s", got, want)
			}
			for _, d := range []string{dir, filepath.Join(dir, "reshard-reports")} {
				names, _ := os.ReadDir(d)
				for _, n := range names {
					if strings.HasPrefix(n.Name(), ".") || n.Name() == "pending.json" || strings.HasPrefix(n.Name(), "reshard.") {
						t.Errorf("%s left in %s", n.Name(), d)
					}
				}
			}
			if got := mustFusee(t, bin, "dump", "--logical", dir); got != logical {
				t.Errorf("the logical dump differs from the original")
			}
		})
	}
}

// TestClosedStdoutAfterReshard: a reshard whose standard output is closed
// before its report is printed has resharded all the same; it says so,
// and where the report is kept, and the report is there.
func TestClosedStdoutAfterReshard(t *testing.T) {
	bin := buildFusee(t)
	src, _ := genDisk(t, bin, 3, 300, 22)
	want := reportLists(t, "dry run", mustFusee(t, bin, "reshard", src, "5", "--dry-run", "--json"))
	dir := copyDir(t, src)
	cmd := exec.Command(bin, "reshard", dir, "5", "--json")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // no reader: the first write fails with EPIPE
	cmd.Stdout = w
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	w.Close()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 141 {
		t.Fatalf("exit %v, want 141 (standard output closed)\n%s", err, errb.String())
	}
	if msg := errb.String(); !strings.Contains(msg, "is done") || !strings.Contains(msg, "reshard-reports") || strings.Contains(msg, "part way") {
		t.Errorf("stderr does not say the reshard is done and where its report is:\n%s", msg)
	}
	if got := reportLists(t, "inspect --report", mustFusee(t, bin, "inspect", dir, "--report", "--json")); got != want {
		t.Errorf("the kept report's lists differ from the dry run's")
	}
}

// TestOutputsCheckedFirst: a --report in a missing directory, or a
// missing --scratch, is refused before anything changes.
func TestOutputsCheckedFirst(t *testing.T) {
	bin := buildFusee(t)
	dir, _ := genDisk(t, bin, 3, 50, 23)
	before, _ := os.ReadFile(filepath.Join(dir, "fusee.meta"))
	for _, args := range [][]string{
		{"--report", filepath.Join(t.TempDir(), "no", "such", "r.json")},
		{"--scratch", filepath.Join(t.TempDir(), "missing")},
	} {
		_, errs, code := fusee(t, bin, append([]string{"reshard", dir, "5"}, args...)...)
		if code == 0 || !strings.Contains(errs, args[1]) {
			t.Errorf("reshard %v: exit %d, want a refusal naming %s:\n%s", args, code, args[1], errs)
		}
		after, _ := os.ReadFile(filepath.Join(dir, "fusee.meta"))
		if string(after) != string(before) {
			t.Fatalf("reshard %v changed fusee.meta", args)
		}
		if _, err := os.Stat(filepath.Join(dir, "reshard.new")); err == nil {
			t.Fatalf("reshard %v left reshard.new", args)
		}
	}
}

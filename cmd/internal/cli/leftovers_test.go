package cli

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `fusee demo | head -2`: the reader goes away after two lines. The demo
// stops as on Ctrl-C, removes its temporary directory, and exits 141.
func TestDemoClosedStdoutLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	cmd := fuseeProcess("demo")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	for range 2 {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	out.Close() // what head does after its two lines
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitOutputClosed {
		t.Fatalf("demo with its output closed: %v, want exit %d; stderr:\n%s", err, ExitOutputClosed, stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "fusee-demo-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if !strings.Contains(stderr.String(), "standard output was closed; demo interrupted: the demo's directory was removed") {
		t.Errorf("stderr does not say what happened:\n%s", stderr.String())
	}
}

// A gen killed outright leaves <dir>.gen-tmp-*: inspect, verify and dump
// refuse it, and the next gen of <dir> removes it and says so.
func TestGenKilledLeavesTempThatIsRefusedThenRemoved(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	gen := fuseeProcess("gen", dir, "--shards", "2", "--runs", "1000000")
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	var tmp string
	for deadline := time.Now().Add(time.Minute); tmp == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m, _ := filepath.Glob(dir + ".gen-tmp-*/shards/0001")
		if len(m) == 1 {
			tmp = filepath.Dir(filepath.Dir(m[0]))
		}
	}
	time.Sleep(300 * time.Millisecond) // let it write some batches
	gen.Process.Kill()
	gen.Wait()
	if tmp == "" {
		t.Fatal("gen made no temporary directory within a minute")
	}
	for _, args := range [][]string{{"inspect", tmp}, {"verify", tmp}, {"dump", tmp, "--logical"}, {"sim", "drive", tmp}} {
		out, err := fuseeProcess(args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure || !strings.Contains(string(out), "is the temporary directory of a gen of "+dir+" that was killed") {
			t.Errorf("fusee %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := fuseeProcess("gen", dir, "--shards", "2", "--runs", "20").CombinedOutput()
	if err != nil {
		t.Fatalf("gen again: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "warning: removed "+tmp+": an earlier gen of "+dir+" was killed") {
		t.Errorf("the next gen does not say it removed %s:\n%s", tmp, out)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there: %v", tmp, err)
	}
}

package cli

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

// TestMain lets the test binary stand in for the fusee command: scripts
// run `exec fusee ...` (or just `fusee ...`) as a real process, with real
// exit codes, stdin, stdout and stderr.
func TestMain(m *testing.M) {
	if os.Getenv("FUSEE_TEST_AS_FUSEE") == "1" { // signal_test.go runs the binary as fusee
		os.Exit(Main("test", os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(removeGenTemplate{m}, map[string]func(){
		"fusee": func() { os.Exit(Main("test", os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs every testdata/script/*.txtar. Each file is one
// scenario: commands with their expected output and fixtures inline. Besides
// testscript's own commands, scripts can use
//
//	exitcode N prog [args...]
//
// which runs prog like exec and requires exit status N (exec only tells
// zero from non-zero); stdout and stderr are then checked as after exec.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *updateScripts,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
		},
	})
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (give the expected code instead)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

package cli

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

// TestMain lets the test binary stand in for the fusee command: run as
// fusee (TestScripts puts it on the scripts' PATH under that name), or
// with FUSEE_TEST_AS_FUSEE=1 (signal_test.go), it is fusee. Scripts run
// `exec fusee ...` as a real process, with real exit codes, stdin, stdout
// and stderr; `fusee ...` alone runs it in the test process (cmdFusee).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "fusee" || os.Getenv("FUSEE_TEST_AS_FUSEE") == "1" {
		os.Exit(Main("test", os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(removeGenTemplate{m}.Run())
}

// TestScripts runs every testdata/script/*.txtar. Each file is one
// scenario: commands with their expected output and fixtures inline. Besides
// testscript's own commands, scripts can use
//
//	exitcode N prog [args...]
//
// which runs prog like exec and requires exit status N (exec only tells
// zero from non-zero); stdout and stderr are then checked as after exec;
// and
//
//	fusee args...
//
// which runs fusee in the test process (see cmdFusee); `exitcode N fusee`
// does too.
func TestScripts(t *testing.T) {
	var err error
	if scriptDir, err = filepath.Abs("testdata/script"); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "fusee")); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			names := map[string]bool{}
			for _, kv := range env.Vars {
				name, _, _ := strings.Cut(kv, "=")
				names[name] = true
			}
			env.Values[setupNames{}] = names
			return nil
		},
		Dir:           scriptDir, // absolute: a call in process moves the working directory
		UpdateScripts: *updateScripts,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
			"fusee":    cmdFusee,
		},
	})
}

// cmdFusee runs fusee in the test process, through Run, as a script's
// `fusee args...` line: no process start, which under -race costs about a
// fifth of a second of CPU (the race runtime and the packages' init), and
// the scripts make some 450 calls. It sees what a process started by exec
// would: the script's directory, environment and TMPDIR, an empty stdin,
// and pipes (not a terminal) for stdout and stderr. A script keeps `exec
// fusee` where only a real process will do: stdin, a terminal, a command
// in the background, a signal, a lock held by another process.
//
// The working directory and TMPDIR are the process's, so calls take turns.
func cmdFusee(ts *testscript.TestScript, neg bool, args []string) {
	code := fuseeInProcess(ts, args)
	switch {
	case neg && code == 0:
		ts.Fatalf("unexpected success")
	case !neg && code != 0:
		ts.Fatalf("fusee exited with %d", code)
	}
}

var inProcess sync.Mutex

func fuseeInProcess(ts *testscript.TestScript, args []string) int {
	env := scriptEnv(ts)
	inProcess.Lock()
	defer inProcess.Unlock()
	wd, err := os.Getwd()
	ts.Check(err)
	ts.Check(os.Chdir(ts.MkAbs(".")))
	defer func() { ts.Check(os.Chdir(wd)) }()
	tmp, hadTmp := os.LookupEnv("TMPDIR")
	ts.Check(os.Setenv("TMPDIR", ts.Getenv("TMPDIR")))
	defer func() {
		if hadTmp {
			os.Setenv("TMPDIR", tmp)
		} else {
			os.Unsetenv("TMPDIR")
		}
	}()
	return Run(context.Background(), "test", args, strings.NewReader(""), ts.Stdout(), ts.Stderr(), env)
}

// setupNames is the key under which a script's Values hold the names of
// the variables testscript's setup gave it.
type setupNames struct{}

// scriptEnv is the environment exec would give a process at this line:
// every variable testscript's setup gave the script and every one the
// script sets with env, at its value now (testscript answers for one name
// at a time; it does not list them).
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for n := range ts.Value(setupNames{}).(map[string]bool) {
		if v := ts.Getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	for _, n := range scriptSetNames(ts) {
		if v := ts.Getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// scriptDir is testdata/script made absolute before any script ran (a
// call in process changes the working directory while it runs).
var scriptDir string

var envAssign = regexp.MustCompile(`(?m)^\s*env\s+(.*)$`)

// setNames caches scriptSetNames per script: a script makes dozens of
// calls, and its file does not change while it runs.
var setNames sync.Map

// scriptSetNames are the NAME= words of the script's env lines that
// testscript's setup did not give it already.
func scriptSetNames(ts *testscript.TestScript) []string {
	if names, ok := setNames.Load(ts.Name()); ok {
		return names.([]string)
	}
	text, err := os.ReadFile(filepath.Join(scriptDir, ts.Name()+".txtar"))
	ts.Check(err)
	setup := ts.Value(setupNames{}).(map[string]bool)
	seen := map[string]bool{}
	var names []string
	for _, m := range envAssign.FindAllStringSubmatch(string(text), -1) {
		for _, w := range strings.Fields(m[1]) {
			if name, _, ok := strings.Cut(w, "="); ok && !setup[name] && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	setNames.Store(ts.Name(), names)
	return names
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
	if args[1] == "fusee" {
		got = fuseeInProcess(ts, args[2:])
	} else if err := ts.Exec(args[1], args[2:]...); err != nil {
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

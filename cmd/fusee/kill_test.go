package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/reshard"
)

// These tests run the fusee command (this test binary running main, see
// TestMain) as real processes on the real disk: SIGKILL at random
// moments of a reshard, resumed each time by the same command; SIGINT and
// SIGTERM, which stop it with a message saying what state it left; a
// directory the user cannot write. FUSEE_LONG=1 (or .ci/kill-sweep.sh)
// kills many more times.

var fuseeBin string // set by TestMain

// asFusee, set in the environment, makes the test binary run main()
// instead of the tests: the tests run it as the fusee command. Building a
// separate binary with `go build` compiled every dependency a second time
// (without -race) on a fresh machine, most of this package's test time.
const asFusee = "FUSEE_TEST_RUN_MAIN"

// killAtEnv, set with asFusee, names a step of a switch (reshard.Testing.Step)
// at which the fusee the tests start SIGKILLs itself.
const killAtEnv = "FUSEE_TEST_KILL_AT"

func TestMain(m *testing.M) {
	if os.Getenv(asFusee) == "1" {
		if step := os.Getenv(killAtEnv); step != "" {
			reshard.Testing.Step = func(s string) error {
				if s == step {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
				return nil
			}
		}
		main()
		return
	}
	// A copy named fusee in a directory of its own, which the read-only
	// test lets another user enter (go's build directory is private).
	tmp, err := os.MkdirTemp("", "fusee-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(tmp, "fusee")
	if err := copyExecutable(bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	// Every process the tests start is fusee (or setpriv running it), so
	// the children inherit the switch.
	os.Setenv(asFusee, "1")
	fuseeBin = bin
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// copyExecutable puts this test binary at dst: a hard link when it can,
// a copy otherwise.
func copyExecutable(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if os.Link(self, dst) == nil {
		return nil
	}
	if out, err := exec.Command("cp", self, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp %s %s: %v\n%s", self, dst, err, out)
	}
	return nil
}

func buildFusee(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary")
	}
	return fuseeBin
}

// startedIn waits until the reshard of dir has begun building (so the
// process has its signal handlers) and reports whether it did within a
// few seconds.
func startedIn(dir string) bool {
	for range 2000 {
		if _, err := os.Stat(filepath.Join(dir, "reshard.new")); err == nil {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// fusee runs the binary to completion and returns its stdout, stderr and
// exit code.
func fusee(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return out.String(), errb.String(), code
}

func mustFusee(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, errs, code := fusee(t, bin, args...)
	if code != 0 {
		t.Fatalf("fusee %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

func genDisk(t *testing.T, bin string, shards, runs int, seed uint64) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	mustFusee(t, bin, "gen", dir, "--shards", fmt.Sprint(shards), "--runs", fmt.Sprint(runs), "--seed", fmt.Sprint(seed))
	return dir, mustFusee(t, bin, "dump", "--logical", dir)
}

// TestKilledAndResumed SIGKILLs `fusee reshard <dir> 5` at random moments,
// each time checking that the directory opens as it was or is refused
// until the reshard is finished, and resumes with the same command; at
// the end verify is clean and the logical dump is the original.
func TestKilledAndResumed(t *testing.T) {
	bin := buildFusee(t)
	dirs, kills := 1, 6
	if testtier.Quick() {
		kills = 2
	}
	if testtier.Long() {
		dirs, kills = 10, 25
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	survived, finishedEarly, midSwitch := 0, 0, 0
	for d := range dirs {
		dir, before := genDisk(t, bin, 3, 300, uint64(d+1))
		// How long an uninterrupted reshard takes here, to kill within it.
		probe := filepath.Join(t.TempDir(), "probe")
		if out, err := exec.Command("cp", "-a", dir, probe).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		start := time.Now()
		mustFusee(t, bin, "reshard", probe, "5")
		span := time.Since(start)
		for k := 0; k < kills; k++ {
			if !killAt(t, bin, rng, span, "reshard", dir, "5") {
				finishedEarly++
				break
			}
			survived++
			// What an operator sees now: the directory opens as it was,
			// or opens resharded, or is refused until the reshard is
			// finished (exit 4).
			out, errs, code := fusee(t, bin, "dump", "--logical", dir)
			switch code {
			case 0:
				if out != before {
					t.Fatalf("kill %d of directory %d: the directory opens with a different logical dump", k, d)
				}
			case 4:
				midSwitch++
				if !strings.Contains(errs, "run `fusee reshard "+dir+"` to finish the interrupted reshard") {
					t.Fatalf("kill %d: exit 4 without the way out:\n%s", k, errs)
				}
			default:
				t.Fatalf("kill %d of directory %d: dump exit %d:\n%s", k, d, code, errs)
			}
		}
		mustFusee(t, bin, "reshard", dir, "5")
		mustFusee(t, bin, "verify", dir)
		if after := mustFusee(t, bin, "dump", "--logical", dir); after != before {
			t.Fatalf("directory %d: the logical dump changed", d)
		}
		if _, err := os.Stat(filepath.Join(dir, "reshard.new")); err == nil {
			t.Fatalf("directory %d: reshard.new left behind", d)
		}
	}
	t.Logf("%d SIGKILLs survived over %d directories (%d left the switch begun; %d reshards finished before their kill); no run lost", survived, dirs, midSwitch, finishedEarly)
}

// killAt runs fusee with args and SIGKILLs it after a random time up to
// span. It reports whether the kill came first; a run that finished
// before it must have succeeded.
func killAt(t *testing.T, bin string, rng *rand.Rand, span time.Duration, args ...string) bool {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(rng.Int64N(int64(span) + 1)))
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == -1 {
		return true
	}
	if err != nil {
		t.Fatalf("fusee %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return false
}

// TestSignalStopsCleanly: SIGINT and SIGTERM stop a reshard before its
// switch with exit 130 and a message saying the directory is as it was
// (or, during the switch, which is not interrupted, it finishes).
func TestSignalStopsCleanly(t *testing.T) {
	bin := buildFusee(t)
	dir, before := genDisk(t, bin, 3, 300, 3)
	stopped := 0
	// Both signals, each at one of the two delays in the quick tier.
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}
	afters := []time.Duration{0, 30 * time.Millisecond}
	for _, i := range testtier.Pick(t, len(sigs)*len(afters), len(afters)) {
		sig, after := sigs[i/len(afters)], afters[i%len(afters)]
		cmd := exec.Command(bin, "reshard", dir, "5")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		startedIn(dir)
		time.Sleep(after)
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			// Finished first; reshard back for the next round.
			mustFusee(t, bin, "reshard", dir, "3")
			continue
		case errors.As(err, &ee) && ee.ExitCode() == 130:
			want := "reshard interrupted before its switch: " + dir + " is unchanged (its old shards, which open as before) and what was built was removed; there is nothing to finish: run the same command again to reshard"
			if !strings.Contains(errb.String(), want) {
				t.Fatalf("%v: exit 130 with\n%s\nwant %q", sig, errb.String(), want)
			}
			stopped++
		default:
			t.Fatalf("%v: %v\n%s", sig, err, errb.String())
		}
		if out := mustFusee(t, bin, "dump", "--logical", dir); out != before {
			t.Fatalf("%v: the directory changed", sig)
		}
		if _, err := os.Stat(filepath.Join(dir, "reshard.new")); err == nil {
			t.Fatalf("%v: reshard.new left behind", sig)
		}
	}
	mustFusee(t, bin, "verify", dir)
	t.Logf("%d reshards stopped by a signal, each with the directory as it was", stopped)
}

// TestReadOnlyDirectory: a user who cannot write the directory gets a
// clear error naming the operation and the file, and nothing changes.
// Tests run as root, who may write anything: the reshard runs as nobody
// through setpriv(1).
func TestReadOnlyDirectory(t *testing.T) {
	bin := buildFusee(t)
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run as another user")
	}
	dir, before := genDisk(t, bin, 3, 100, 4)
	// nobody may read the directory, not write it.
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		if strings.HasPrefix(p, os.TempDir()) && p != os.TempDir() {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "reshard", dir, "5")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("reshard as nobody: %v\n%s", err, out)
	}
	want := "creating " + dir + "/reshard.new: mkdir " + dir + "/reshard.new: permission denied"
	if !strings.Contains(string(out), want) {
		t.Fatalf("reshard as nobody:\n%s\nwant %q", out, want)
	}
	if got := mustFusee(t, bin, "dump", "--logical", dir); got != before {
		t.Fatal("the directory changed")
	}
}

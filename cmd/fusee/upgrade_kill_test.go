package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/internal/testtier"
)

// genV2Disk generates a log format 2 directory on the disk and returns it
// with the logical dump of the format 3 directory the same flags make (the
// content the upgrade must end with).
func genV2Disk(t *testing.T, bin string, seed string) (string, string) {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "ref")
	mustFusee(t, bin, "gen", ref, "--shards", "3", "--runs", "300", "--seed", seed)
	dir := filepath.Join(t.TempDir(), "data")
	mustFusee(t, bin, "gen", dir, "--shards", "3", "--runs", "300", "--seed", seed, "--log", "2")
	return dir, mustFusee(t, bin, "dump", "--logical", ref)
}

// TestUpgradeKilledAndResumed SIGKILLs `fusee upgrade <dir>` at random
// moments; after each kill the directory is still log format 2 (refused,
// naming the upgrade), upgraded with the original content, or refused
// until the upgrade is finished (exit 4, naming `fusee upgrade <dir>`);
// the same command resumes. At the end verify is clean and the logical
// dump is the original.
func TestUpgradeKilledAndResumed(t *testing.T) {
	bin := buildFusee(t)
	dirs, kills := 1, 6
	if testtier.Quick() {
		kills = 2
	}
	if testtier.Long() {
		dirs, kills = 5, 25
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	survived, finishedEarly, midSwitch := 0, 0, 0
	for d := range dirs {
		dir, want := genV2Disk(t, bin, string(rune('1'+d)))
		probe := filepath.Join(t.TempDir(), "probe")
		if out, err := exec.Command("cp", "-a", dir, probe).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		start := time.Now()
		mustFusee(t, bin, "upgrade", probe)
		span := time.Since(start)
		for k := 0; k < kills; k++ {
			if !killAt(t, bin, rng, span, "upgrade", dir) {
				finishedEarly++
				break
			}
			survived++
			out, errs, code := fusee(t, bin, "dump", "--logical", dir)
			switch {
			case code == 0:
				if out != want {
					t.Fatalf("kill %d: the directory opens upgraded with a different logical dump", k)
				}
			case code == 1 && strings.Contains(errs, "run `fusee upgrade "+dir+"` to convert it"):
				// Still log format 2, as it was.
			case code == 4 && strings.Contains(errs, "run `fusee upgrade "+dir+"` to finish it"):
				midSwitch++
			default:
				t.Fatalf("kill %d: dump exit %d:\n%s", k, code, errs)
			}
		}
		mustFusee(t, bin, "upgrade", dir)
		mustFusee(t, bin, "verify", dir)
		if after := mustFusee(t, bin, "dump", "--logical", dir); after != want {
			t.Fatalf("directory %d: the logical dump is not the original", d)
		}
		for _, left := range []string{"reshard.new", "reshard.old"} {
			if _, err := os.Stat(filepath.Join(dir, left)); err == nil {
				t.Fatalf("directory %d: %s left behind", d, left)
			}
		}
	}
	t.Logf("upgrade: %d SIGKILLs survived over %d directories (%d left the switch begun; %d upgrades finished before their kill); no run lost", survived, dirs, midSwitch, finishedEarly)
}

// TestUpgradeSignalStopsCleanly: SIGINT and SIGTERM stop an upgrade before
// its switch with exit 130 and a message saying the directory is as it
// was; the rerun upgrades it.
func TestUpgradeSignalStopsCleanly(t *testing.T) {
	bin := buildFusee(t)
	stopped := 0
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}
	for _, i := range testtier.Pick(t, len(sigs), 2) { // one a day in the quick tier
		sig := sigs[i]
		dir, want := genV2Disk(t, bin, "3")
		cmd := exec.Command(bin, "upgrade", dir)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		startedIn(dir)
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == 130:
			msg := "upgrade interrupted before its switch: " + dir + " is unchanged (log format 2, which opens as before) and what was built was removed; run the same command again to upgrade"
			if !strings.Contains(errb.String(), msg) {
				t.Fatalf("%v: exit 130 with\n%s\nwant %q", sig, errb.String(), msg)
			}
			if _, errs, code := fusee(t, bin, "verify", dir); code != 1 || !strings.Contains(errs, "to convert it") {
				t.Fatalf("%v: after the stop the directory is not the format 2 one: exit %d %s", sig, code, errs)
			}
			stopped++
		default:
			t.Fatalf("%v: %v\n%s", sig, err, errb.String())
		}
		mustFusee(t, bin, "upgrade", dir)
		if out := mustFusee(t, bin, "dump", "--logical", dir); out != want {
			t.Fatalf("%v: the upgraded directory differs", sig)
		}
	}
	t.Logf("%d upgrades stopped by a signal, each with the directory as it was", stopped)
}

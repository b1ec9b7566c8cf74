package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A ring command waiting for another writer's lock stops on SIGINT or
// SIGTERM with exit 130 and writes nothing.
func TestRingCommandsStopOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "orders.ring")
			if out, err := fuseeProcess("ring", "init", path, "--namespace", "orders", "--shards", "4", "--cells", "a,b").CombinedOutput(); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			before, _ := os.ReadFile(path)
			lock, err := os.Open(path) // the ring file itself is the lock
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			cmd := fuseeProcess("ring", "open-epoch", path, "--slots", "0-3=b")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // it is waiting for the lock (up to --lock-timeout, 5 s)
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitCancelled {
				t.Fatalf("after %v: %v, want exit %d; stderr:\n%s", sig, err, ExitCancelled, stderr.String())
			}
			if !strings.Contains(stderr.String(), "ring open-epoch interrupted: ") || !strings.Contains(stderr.String(), "waiting for "+path+": locked by pid ") {
				t.Errorf("stderr does not say who held the lock and what was interrupted:\n%s", stderr.String())
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v to stop", d)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the ring file changed")
			}
			if _, err := os.Lstat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a lock file was made: %v", err)
			}
		})
	}
}

// fuseeProcess runs this test binary as fusee (see TestMain).
func fuseeProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FUSEE_TEST_AS_FUSEE=1")
	return cmd
}

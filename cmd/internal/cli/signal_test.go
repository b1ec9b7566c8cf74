package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
			cmd := fuseeProcess("ring", "open-epoch", path, "--slots", "0-3=b", "--lock-timeout", "2m")
			var stderr lockedBuffer
			waiting := make(chan struct{})
			stderr.await("waiting for "+path, waiting)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Signal only once it says it waits for the lock: its signal
			// handling is in place by then, however loaded the machine.
			select {
			case <-waiting:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("it never said it was waiting for the lock; stderr:\n%s", stderr.String())
			}
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

// lockedBuffer collects a child's stderr, and closes a channel once a
// given text has appeared in it.
type lockedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	text string
	seen chan struct{}
}

func (b *lockedBuffer) await(text string, seen chan struct{}) { b.text, b.seen = text, seen }

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.seen != nil && strings.Contains(b.buf.String(), b.text) {
		close(b.seen)
		b.seen = nil
	}
	return n, err
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fuseeProcess runs this test binary as fusee (see TestMain).
func fuseeProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FUSEE_TEST_AS_FUSEE=1")
	return cmd
}

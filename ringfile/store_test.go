package ringfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestMain lets a test re-execute this binary as a second writer process.
func TestMain(m *testing.M) {
	if path := os.Getenv("RINGFILE_CHILD_FILE"); path != "" {
		os.Exit(childOpenEpoch(path))
	}
	os.Exit(m.Run())
}

// childOpenEpoch opens an epoch on the ring file, with the expectation in
// RINGFILE_CHILD_EXPECT: the current ring shifted by one shard, so every
// write differs from the ring it replaces. Exit 0 won, 5 lost the
// compare-and-set.
func childOpenEpoch(path string) int {
	expect, _ := strconv.ParseInt(os.Getenv("RINGFILE_CHILD_EXPECT"), 10, 64)
	_, err := Update(path, WriteOptions{ExpectRevision: expect}, func(cur *Policy) (*Policy, error) {
		old := cur.CurrentEpoch().Ring
		ring := slices.Clone(old)
		for i := range ring {
			ring[i].Cell = old[(i+1)%len(old)].Cell
		}
		return OpenEpoch(cur, ring, ShardChange{})
	})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrConflict):
		return 5
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

func runChildren(t *testing.T, path string, n int, expect int64) map[int]int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), "RINGFILE_CHILD_FILE="+path,
				fmt.Sprintf("RINGFILE_CHILD_EXPECT=%d", expect))
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Error(err)
			}
			if code == 1 {
				t.Errorf("child %d failed: %s", i, out)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

func TestConcurrentWritersWithOneRevisionExactlyOneWins(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 6, "a", "b", "c"))
	const n = 6
	codes := runChildren(t, path, n, 1)
	if codes[0] != 1 || codes[5] != n-1 {
		t.Fatalf("exit codes %v: want exactly one winner and %d conflicts", codes, n-1)
	}
	p, err := LoadValid(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != 2 || len(p.Epochs) != 2 {
		t.Errorf("revision %d with %d epochs", p.Revision, len(p.Epochs))
	}
}

func TestConcurrentWritersWithoutExpectationLoseNoEpoch(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 6, "a", "b", "c"))
	const n = 5
	codes := runChildren(t, path, n, AnyRevision)
	if codes[0] != n {
		t.Fatalf("exit codes %v", codes)
	}
	p, err := LoadValid(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != 1+n || len(p.Epochs) != 1+n || p.Current != n {
		t.Errorf("revision %d, %d epochs, current %d: an epoch was lost", p.Revision, len(p.Epochs), p.Current)
	}
}

func TestUpdateConflictAndDryRun(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 4, "a"))
	before := readFile(t, path)
	open := func(cur *Policy) (*Policy, error) {
		return OpenEpoch(cur, EvenRing(4, []string{"a", "b"}), ShardChange{})
	}
	_, err := Update(path, WriteOptions{ExpectRevision: 7, ExpectedBy: "--expect-revision"}, open)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Actual != 1 || !strings.Contains(err.Error(), "--expect-revision expects revision 7 but the file is at revision 1") {
		t.Fatalf("stale expectation: %v", err)
	}
	next, err := Update(path, WriteOptions{ExpectRevision: 1, DryRun: true}, open)
	if err != nil || next.Revision != 2 {
		t.Fatalf("dry run: %v", err)
	}
	if got := readFile(t, path); string(got) != string(before) {
		t.Error("dry run wrote the file")
	}
	if _, err := Update(path, WriteOptions{ExpectRevision: 1}, open); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 { // the ring file: no lock file, no temporary left
		t.Errorf("directory holds %d entries", len(entries))
	}
}

func TestUpdateRefusesToRewriteHistory(t *testing.T) {
	path := createRing(t, newPolicy(t, "orders", 4, "a", "b"))
	_, err := Update(path, WriteOptions{ExpectRevision: AnyRevision}, func(cur *Policy) (*Policy, error) {
		cur.Epoch(0).Ring[0].Cell = "b" // an in-place ring edit
		cur.Revision++
		return cur, nil
	})
	if !errors.Is(err, ErrSealed) {
		t.Fatalf("in-place edit: %v", err)
	}
}

func TestUpdateRefusesAnInvalidFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.ring")
	if err := os.WriteFile(path, []byte(brokenRing), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Update(path, WriteOptions{ExpectRevision: AnyRevision}, func(cur *Policy) (*Policy, error) { return Retire(cur, 0) })
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("acted on an invalid file: %v", err)
	}
}

func TestCreateRefusesAnExistingFile(t *testing.T) {
	p := newPolicy(t, "orders", 4, "a")
	path := createRing(t, p)
	if err := Create(path, p, WriteOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file: %v", err)
	}
}

func TestCreateExpectsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.ring")
	p := newPolicy(t, "orders", 4, "a")
	err := Create(path, p, WriteOptions{ExpectRevision: 3, ExpectedBy: "--expect-revision"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "--expect-revision expects revision 3 but the file does not exist yet") {
		t.Fatalf("create with an expectation: %v", err)
	}
	if err := Create(path, p, WriteOptions{ExpectRevision: 0}); err != nil {
		t.Fatalf("create expecting none: %v", err)
	}
}

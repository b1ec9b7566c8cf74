package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeState is every name under dir with its mode, size, modification
// time and, for a file, a hash of its bytes: what a read-only command
// must leave as it was (snapshot, with the times).
func treeState(t *testing.T, dir string) map[string]string { return snapshotTimes(t, dir, true) }

// Read-only commands create, write and remove nothing, LOCK files
// included: where the directory's LOCK or a store's is missing they lock
// the directory that would hold it instead of creating one (issue 28
// item 1: inspect, verify, dump and reshard --dry-run each created them).
func TestReadOnlyCommandsCreateNoLock(t *testing.T) {
	dir := genDir(t)
	locks, _ := filepath.Glob(filepath.Join(dir, "LOCK"))
	stores, _ := filepath.Glob(filepath.Join(dir, "shards", "*", "store", "LOCK"))
	if len(locks) != 1 || len(stores) != 3 {
		t.Fatalf("gen left %v and %v, want the directory's LOCK and 3 stores'", locks, stores)
	}
	commands := [][]string{{"inspect", dir}, {"inspect", "--json", dir}, {"verify", dir}, {"dump", "--logical", dir},
		{"dump", dir}, {"reshard", dir, "5", "--dry-run"}, {"reshard", dir, "2", "--dry-run", "--json"}, {"upgrade", dir, "--dry-run"}}
	for _, missing := range [][]string{nil, locks, stores, append(locks, stores...)} {
		for _, p := range missing {
			os.Remove(p)
		}
		before := treeState(t, dir)
		for _, args := range commands {
			if _, errOut, code := runFusee(t, nil, args...); code != 0 {
				t.Fatalf("fusee %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			after := treeState(t, dir)
			for p, v := range before {
				if after[p] != v {
					t.Errorf("fusee %s with %d LOCK files removed: %s changed", strings.Join(args, " "), len(missing), p)
				}
			}
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("fusee %s with %d LOCK files removed: %s was created", strings.Join(args, " "), len(missing), p)
				}
			}
		}
	}
}

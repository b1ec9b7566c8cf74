package ringtest_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/ringfile"
	"github.com/fusee-dev/fusee/ringfile/ringtest"
)

// Random histories with grown, shrunk and moved shard sets on a ring file:
// every id minted in any epoch resolves to the cell its own epoch's ring
// names, and an unnamed change of the set is refused. (The etcd store runs
// the same histories beside a file: ringfile/etcdstore, tag etcd.)
func TestShardSetHistoriesOnAFile(t *testing.T) {
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		ringtest.Run(rt, "ns", ringfile.FileStore{Path: filepath.Join(dir, fmt.Sprintf("h%d.ring", run))})
	})
}

// The reference's cell binding scenario on ring files.
func TestCellBindingScenarioOnAFile(t *testing.T) {
	dir := t.TempDir()
	ringtest.BindingScenario(t, "", func(ns string) ringfile.Store {
		return ringfile.FileStore{Path: filepath.Join(dir, ns+".ring")}
	})
}

// Claimers racing on one file (16 with fingerprint A, 16 with B): the
// lock serialises them; exactly one fingerprint wins.
func TestCellBindingRaceOnAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.ring")
	p, err := ringfile.OpenEpoch(&ringfile.Policy{Namespace: "orders", Current: ringfile.NoEpoch}, ringfile.EvenRing(4, []string{"a"}), ringfile.ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ringfile.Create(path, p, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	ringtest.BindingRace(t, 16, func() ringfile.Store { return ringfile.FileStore{Path: path, LockWait: 30 * time.Second} })
}

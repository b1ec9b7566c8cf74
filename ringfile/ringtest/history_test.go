package ringtest_test

import (
	"fmt"
	"path/filepath"
	"testing"

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

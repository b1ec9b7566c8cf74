package check

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ExtraStoreFindings reports every shard directory under dir/shards whose
// number is at or beyond count, the shard count fusee.meta gives: opening
// never looks at them, so recovery cannot notice them. It only lists the
// shards directory.
func ExtraStoreFindings(fs vfs.FS, dir string, count int) []Finding {
	names, err := fs.List(fs.PathJoin(dir, "shards"))
	if err != nil {
		return nil // recovery opened the stores, so this does not happen
	}
	sort.Strings(names)
	var out []Finding
	for _, name := range names {
		n, err := strconv.Atoi(name)
		if err != nil || len(name) != 4 || n < count {
			continue
		}
		out = append(out, Finding{Kind: KindExtraStore, Severity: KindExtraStore.Severity(), Shard: -1,
			Detail: fmt.Sprintf("%s is a shard directory beyond the %d shards fusee.meta gives (shards/0000 to shards/%04d)",
				fs.PathJoin(dir, "shards", name), count, count-1),
			Hint: KindExtraStore.Hint()})
	}
	return out
}

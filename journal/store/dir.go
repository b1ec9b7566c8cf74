package store

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ShardDir is shard's directory in a data directory: shards/NNNN.
func ShardDir(fs vfs.FS, dir string, shard int) string {
	return fs.PathJoin(dir, "shards", fmt.Sprintf("%04d", shard))
}

// StoreDir is shard's store directory: shards/NNNN/store.
func StoreDir(fs vfs.FS, dir string, shard int) string {
	return fs.PathJoin(ShardDir(fs, dir, shard), "store")
}

// Package store owns one shard's pebble store: its key layout
// (storekey.go), opening and loading a store and writing a checkpoint's
// changes (store.go), bulk and streamed store writes (storebulk.go,
// storestream.go), the build layout of a store being built and its
// rewrite into the store layout (buildlayout.go), the read-only ShardReader that streams a store with
// its log tail as an overlay (shardreader.go, shardreader_lookup.go,
// rawrun.go for the raw run copy of a reshard), the scratch stores and
// spill maps of the tools (spill.go), pebble's fatal errors turned into
// errors (fatal.go), the shard and store paths of a data directory
// (dir.go), and the store's typed errors (StoreError,
// StoreCorruptionError, LogError for a tail entry that does not apply).
// Values are encoded by package journal/model.
//
// # What this package must never do
//
// It never reads or writes the shared write-ahead log or fusee.meta, and
// never takes the directory's lock: package journal (the directory layer)
// does, and hands it log tails (ShardTail) already read. It never imports
// package journal.
package store

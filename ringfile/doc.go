// Package ringfile owns a namespace's placement policy as an operator holds
// it in a file: the model (epochs, their sealed rings and shard sets,
// declared cells and their bindings, the revision), the file format, validation, the planner that
// computes the next ring, resolution of ids to cells, import and export of
// the reference coordinator's stored JSON, and the census that gates
// retirement.
//
// The invariants it keeps, on every path that writes:
//
//   - A published ring is sealed. No function edits an epoch's ring in place;
//     OpenEpoch is the only way to change placement, and Update checks
//     every write against the file it replaces (CheckTransition): no epoch
//     disappears, no ring changes, no status moves backwards, the current
//     epoch never goes back and the revision always goes up.
//   - Exactly one epoch is OPEN and it is the current one.
//   - Every ring places each shard of its epoch's own shard set (the shard
//     numbers it names) on exactly one declared cell, and a new epoch's set
//     differs from the current one only as the write names (ShardChange), so an
//     id resolves through its own epoch's ring to one cell, or to an error;
//     never by a modulo wrap onto some other cell.
//   - Two declarations of one cell id with different storage fingerprints
//     are refused: they would conflate two databases into one cell. A
//     cell's declared fingerprint is its binding (bindings.go).
//   - Every write is a compare-and-set on the revision, serialised across
//     processes by an exclusive flock on the ring file itself (a symbolic
//     link's target; no sidecar lock file), written atomically and durably
//     (the directory is synced after the rename). The lock, the atomic
//     replace and the directory sync are package meta's (meta.LockFile,
//     meta.ReplaceFile, meta.SyncDir), the ones data directories use: there
//     is one implementation of each.
//
// Parsing is split from checking on purpose: Parse rejects only what it
// cannot represent (syntax, unknown keys, duplicates, malformed values),
// and Validate reports every semantic problem at once, so a broken policy
// can be loaded and all its faults shown. Commands other than validation
// refuse to act on a policy that has error findings.
//
// Where a policy lives is a Store: FileStore is the ring file described
// here; package ringfile/etcdstore keeps it in the reference coordinator's
// etcd key. Every store's write goes through Apply, so the rules above hold
// whatever the store.
//
// This package must never know about cobra, terminals or colour, and does
// no I/O beyond reading and writing its own files (the ring file,
// plan and census files, and the JSON it imports or exports).
package ringfile

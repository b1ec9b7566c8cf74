// Package model owns fusee's logical data model: records, ops and their
// log encoding (codec.go), runs, messages and completion tokens, run
// references (refs.go), the Shard state machine ((*Shard).Apply, which
// also regenerates a shard's ID index, timers and outbox) with its change
// tracking (changes.go), shard comparison (diff.go), and the byte
// encodings of the values a shard store holds: checkpoint header, run
// entries, messages, histories (storevalue.go), and raw record scanning
// (rawrecord.go).
//
// An evicting Shard reads what it dropped back through a Backing
// (backing.go), an interface defined here and implemented by the
// directory layer (package journal) over the shard's store.
//
// # What this package must never do
//
// It does no I/O: no files, no pebble, no log, no fusee.meta, no lock. It
// never imports journal or journal/store (they import it): a type either
// of them needs from the other side goes through an interface here.
package model

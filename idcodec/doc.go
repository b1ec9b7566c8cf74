// Package idcodec owns the self-routing instance id and the hash that
// places new ids on shards.
//
// An id is {namespace}[.c{cell}].e{epoch}.s{shard}.{ulid}. Epoch and shard
// are stamped at mint time and read back verbatim when an id is resolved;
// they are never recomputed, so an instance keeps its placement for life.
// Anything that does not match the grammar is a legacy id: that is a parse
// result (legacy ids route to the genesis cell), never an error.
//
// Hash64 and ShardFor must give, bit for bit, the answers of the Java
// reference they come from: FNV-1a 64 over UTF-16 code units, finished with
// murmur3's fmix64, reduced with Math.floorMod on the signed value. The
// journal package also uses Hash64 to place workflow IDs on data-directory
// shards, so changing it would strand data: golden vectors pin it.
//
// This package must never do I/O, read configuration or know about
// commands, rings or storage: it is pure functions plus one immutable
// placement snapshot type.
package idcodec

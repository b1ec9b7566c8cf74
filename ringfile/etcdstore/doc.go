// Package etcdstore keeps a namespace's placement policy where the
// reference coordinator keeps it: in etcd, under the key
// /wiggle/coord/policy/<namespace>, the value being the JSON the
// coordinator writes and reads ({"currentEpoch":N,"revision":N,
// "epochs":"<the epochs object, as a string>"}, compact, no final
// newline). It implements ringfile.Store, so every ring command works on
// the live policy with the checks it applies to a file.
//
// The invariants it keeps:
//
//   - Every write is one etcd transaction conditioned on the key being
//     exactly as it was read (its version and its modification revision;
//     a create on the key being absent), so a write computed from a stale
//     read commits nothing. The policy's own revision is checked before
//     the transaction (ringfile.Apply): a write that carries an expected
//     revision and loses the race is a *ringfile.ConflictError, as for a
//     file; one that carries none is recomputed from a fresh read a few
//     times, as the reference coordinator retries its compare-and-set.
//   - Nothing is written that the reference would not read, and nothing
//     is read that it would not: the value must be its shape, with the
//     epochs as a string; fusee's own checks (sealed rings, forward-only
//     status, a valid policy) apply on top.
//   - An etcd that does not answer (down, partitioned, without quorum) is
//     an *UnreachableError naming the endpoints and how long fusee waited,
//     never a hang: each request is bounded by the command timeout.
//
// What the value does not hold comes from elsewhere: the namespace from
// the key; each epoch's shard set is the shards its ring names (the seed's
// rule: the shard set for an epoch is exactly the shard numbers its ring
// names); cells are declared from the rings, without fingerprints, as
// ringfile.ImportWiggle declares them. Cell bindings (cell id ->
// storage fingerprint) are keys of their own beside the policy's, under
// /wiggle/coord/cellbinding/<namespace>/<cellId>, read with the policy
// in one transaction and written in the same transaction as it (see
// bindingOps).
package etcdstore

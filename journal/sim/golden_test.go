package sim

// goldenLogical pins what `fusee dump --logical` prints for a directory
// that gen made from one seed: the SHA-256 of its output, taken with the
// build before gen's speed work of session 5 (fusee-main gen <dir>
// --shards 3 --runs 3000 --seed 5; fusee dump --logical <dir> | sha256sum,
// 25,931 lines). Work on gen's speed (batching, eviction, store tuning)
// must leave the logical content of every seed unchanged; a change to
// the workload itself (docs/simulator.md) changes this hash on purpose,
// and then the new value is taken the same way and the reason written
// here. TestGenSameDumps checks it, with the default engine settings
// and with one that evicts every few dozen resident runs.
const goldenLogical = "18589fef54fefe436f316d7690afd816a44d851c18d2b0d94484d58ad2abde7e"

// Package check reads a data directory's recovered state and reports on it:
// Inspect summarises it, Verify checks it for consistency (fsck), and
// WriteLogicalDump writes it in a canonical form that does not depend on
// shard count or run numbers, so two directories can be compared with diff.
//
// # What it works on
//
// The checks read shards as streams, never a whole directory at once: a
// directory on disk through OpenDir (store.ShardReader per shard: the
// store in key order with its log tail as an overlay, read-only), a state
// built in memory through State (FromShards, Load), whose *model.Shard
// values tests mutate to plant damage. Each shard's runs pass once; the
// per-run checks are made as they pass; what needs more than one run goes
// through store.SpillMap sorts and joins bounded by Options.Memory
// (source.go, keys.go; verify.go, verify_join.go and dump.go say what each
// joins): both read the runs references name in key order, shard by
// shard, after every shard has passed (refJoin, verify_join.go); dump
// renders each run as it passes into a template sorted into the dump's
// order by a spill map, with holes the join fills (dumprun.go). Memory is
// therefore the budget plus the shards' store readers, whatever the
// number of runs. Both use every core (up to four): each checks or
// renders shards on several goroutines at once, and both keep their
// output in one order whichever goroutine finishes first (parallel.go).
//
// # Verify
//
// Verify returns every finding, never stopping at the first. A Finding has
// a stable Kind (a short string id such as "wrong-shard"; the Kind
// constants list them all with what each checks), a Severity, the shard
// and run it is about, a detail and a hint. Severity error means the state
// breaks an invariant the engine relies on; warning means a heuristic saw
// something that should not happen (run numbers inside message IDs); info
// is a fact an operator may want to know that is not a problem: a
// reference to a run that no longer exists (KindRefDangling) and a torn
// log tail that recovery dropped (KindTornTail). Only errors and warnings
// make `fusee verify` exit 1. A directory that recovery refuses (damaged
// store or log) is one KindUnreadable finding.
//
// Duplicate run numbers cannot be stored: a store keys runs by number
// (journal/store/storekey.go) and the in-memory model by a map, so the check
// that stands for them is KindRunKeyMismatch (an entry whose own number is
// not its key), which a reshard that builds shards in memory could cause.
//
// A reference is dangling when it names a shard that exists and a run
// number that shard has handed out (below its NextRun) but no longer
// holds, or when its run number is model.NoSuchRun, the number a reshard
// writes into a reference whose run it found gone; NoSuchRun is never
// looked up, whatever shard the reference names. A reference to a run number the shard never handed out, or to a
// shard that does not exist, is an error: no sequence of engine steps
// makes one. A reference that resolves must name the right run: a child's
// parent reference must land on a Child record naming the child's ID, a
// predecessor must be the previous generation of the same workflow ID, and
// so on (see the Kind constants).
//
// Run numbers do not order the runs of a workflow ID: the latest run is the
// highest generation (the ID index must name it), and a run number below
// an older generation's is an error (KindGenOrder) only when neither run
// was renumbered by a reshard. A completion token must name its own run
// and position and carry its shard's store generation mod 64.
//
// # The logical dump
//
// WriteLogicalDump writes one JSON object per line: every run with its
// journal records (or archived history), pending timers, outbox messages
// and receiver dedup entries (each with the workflow its message was
// delivered to). A run is named by its workflow ID and its
// generation among that ID's runs ("wf-17#2"), never by shard or run
// number, and every typed reference (parent, predecessor, next run, sender,
// Ctx::key value, completion token) is rendered through that identity, with
// a journal position where it has one ("wf-17#2@5"), or as "dangling".
// Run numbers, shard numbers, outbox sequence numbers, store generations
// (in tokens too) and the renumbered flag are physical: WriteDump with Physical set puts them under a "phys"
// member of each line, and the logical dump omits them. Two directories
// holding the same workflows therefore dump byte for byte the same
// whatever their shard counts; that is the oracle the simulator and
// reshard tests compare against. Dump lines are documented on WriteDump.
//
// # What it must never do
//
// It never writes to a data directory and never ticks a shard: OpenDir and
// Load open read-only (no log append, no checkpoint, no truncation,
// nothing expires) and everything else only reads. Its scratch stores go
// to a directory of their own (Options.Scratch), removed at the end. It
// never holds a whole shard or directory of a Dir in memory.
// It knows nothing of cobra, terminals or colour; the commands in
// cmd/internal/cli print what it returns.
package check

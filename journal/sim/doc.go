// Package sim is a deterministic simulated durable-workflow engine. There
// is no real engine in this repository, so sim plays one: it drives
// workflow runs on a virtual clock and writes our data-directory format
// the way an engine would — every change a model.Op committed through
// journal.DB.Commit, checkpoints through journal.DB.Checkpoint — so that
// `fusee gen` can make realistic directories and `fusee sim drive` can
// run one to completion after it was moved, checked or resharded.
//
// # Engine
//
// Workflow code (workflows.go) runs like an SDK runs it: from the top,
// every time, replaying its commands against the run's journal and
// appending records only past the journal's end; code that waits unwinds
// and runs again when what it waits for is appended. A scripted outside
// world (world.go) starts workflows (gen only), signals them, sends
// updates, answers async completions by their token, and cancels,
// terminates, resets and restarts runs. Messages between runs go through
// the sender shard's outbox and are delivered by one batch holding the
// receiver's OpSeen and effect and the sender's OpAck; receivers drop
// repeats by message ID.
//
// # Determinism
//
// The engine is shard-count oblivious: the same workload reaches the same
// logical state (check.WriteLogicalDump) with any shard count, resharded
// or not, stopped and reopened or not. It keeps that by three rules:
//
//   - Order: due events are processed one at a time in the order of their
//     logical key (virtual time, workflow ID, generation, position, kind,
//     message ID). A batch holds only events on distinct workflow IDs, so
//     batch boundaries never change an outcome.
//   - Choice: every choice hashes the workload seed (carried in each run's
//     input) with logical names — workflow ID, generation, position,
//     message ID — never a shared random stream, a shard or a run number.
//   - State: nothing lives outside the directory. The events an engine has
//     pending are derived from the journals (and checked against them
//     before they run), and the clock is the later of the last
//     checkpoint's and the latest record's time. The engine's scratch
//     store (its event queues spilled to disk, spill.go) only holds such
//     derived events and is removed when the engine is done.
//
// # Memory
//
// gen and drive keep only the runs they are working on in memory: the DB
// evicts runs at each checkpoint (journal.DB.SetEvictKeep: all but up to
// MaxResident/2 running ones) and reads a run back from its store when an
// event needs it; ID index and dedup lookups of keys never written are
// answered by in-memory key filters; the engine checkpoints early once
// Config.MaxResident runs are in memory; its event queues spill past
// 100,000 events each. Drive opens the directory with an evicting
// recovery (journal.OpenOptions.Evict: no run loaded) and derives its
// pending events from the stores one run at a time. What still grows
// with the directory: the outbox (messages in flight, held by the DB) and
// the key filters (about 1.5 bytes per workflow and message ID).
//
// Run numbers appear only in the typed reference fields the format has
// for them (parent, caller, predecessor, next, by, Ctx::key, completion
// token); payloads and message IDs never contain one. A workflow ID's
// latest run is its highest generation (the shard's ID index), never its
// highest number. Completion tokens carry their shard's store generation
// mod 64, and an answer must present the whole token the Async record
// holds, so a token handed out before a reshard is refused.
//
// # What it must never do
//
// It never touches the directory's files except through journal.DB, never
// changes shard state except through ops the DB commits (or, in its unit
// tests, Shard.Apply), and knows nothing of terminals or commands. It is a
// test and demonstration engine: its workflow types, delays and mix are
// fixed by this package and docs/simulator.md, not configured by users.
package sim

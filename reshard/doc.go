// Package reshard changes the shard count of a closed local data
// directory, offline: every run moves to the shard its workflow ID hashes
// to under the new count, with its whole journal; runs are renumbered by
// documented rules and every reference to a run is rewritten; outboxes and
// history archives move with the runs. New shards are built under
// <dir>/reshard.new and the switch goes through fusee.meta's format=reshard
// state, so a crash at any point leaves a directory that opens as before or
// that a rerun finishes. The design is in docs/reshard.md.
//
// Upgrade converts a log format 2 directory (a log per shard) to log
// format 3 through the same passes and switch (one implementation: rebuild
// and finishSwitch serve both), reading the old shards' tails from their
// own logs and switching through fusee.meta's format=upgrade state.
//
// It owns the renumbering plan, the rewrite of references, the build of the
// new shards and the switch, and the report and plan files, whose lists
// (List) spill past their share of the memory budget like its maps. It reads old shards only through the journal
// package's read-only recovery and must never tick a run, append to an old
// log or change an old shard's files before the switch; it knows nothing
// about terminals or commands: its refusals and failures are typed
// (DamagedError, UndoError, SwitchError, StalePlanError, ...) and the
// command layer names the command to run next. ReadStatus tells,
// read-only, what a stopped reshard left in a directory (building,
// switching, cleaning up); the command layer words it and names the
// command that finishes it (Status.Command).
package reshard

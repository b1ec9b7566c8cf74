package reshard

import "time"

// Outcome says what a reshard did.
type Outcome string

// Outcomes.
const (
	// Done: the directory was resharded.
	OutcomeDone Outcome = "done"
	// NothingToDo: the directory already has the asked count (or no count
	// was given and no reshard was interrupted).
	OutcomeNothingToDo Outcome = "nothing-to-do"
	// Finished: a reshard interrupted after its switch began was finished.
	OutcomeFinished Outcome = "finished-interrupted"
	// CleanedUp: only leftovers of an earlier attempt were removed.
	OutcomeCleanedUp Outcome = "cleaned-up-leftovers"
	// Planned: a dry run; nothing was changed.
	OutcomePlanned Outcome = "planned"
)

// Report is what a reshard did, or (dry run) would do. Its JSON field
// names are a stable interface, documented in docs/reshard.md; add
// fields, never rename or remove them.
type Report struct {
	Version   int     `json:"report_version"` // ReportVersion
	Dir       string  `json:"dir"`
	Outcome   Outcome `json:"outcome"`
	DryRun    bool    `json:"dry_run"`
	OldShards int     `json:"old_shards"`
	NewShards int     `json:"new_shards"`
	// OldLog and NewLog are the log formats an upgrade goes from and to
	// (2 and 3); zero in a reshard's report.
	OldLog int `json:"old_log,omitempty"`
	NewLog int `json:"new_log,omitempty"`
	// CleanedUp lists leftovers of earlier attempts that were removed
	// (reshard.new before a switch, reshard.old after one).
	CleanedUp []string `json:"cleaned_up,omitempty"`
	// StoreGen is the new stores' generation (old + 1); its value mod 64
	// is in every new completion token.
	StoreGen uint64 `json:"store_generation,omitempty"`

	Counts Counts `json:"counts"`
	// Renumbered lists every unfinished run whose number changed: its
	// Ctx::key values change. By new shard, then new number.
	Renumbered *List[RenumberedRun] `json:"renumbered_unfinished"`
	// Tokens lists every pending completion token and what it now is.
	// Every pending token changes (the store generation is part of it).
	// By old shard, old number, then position.
	Tokens *List[TokenChange] `json:"token_changes"`
	// NewShardRuns is how many runs each new shard holds.
	NewShardRuns []int64 `json:"new_shard_runs,omitempty"`
	// NewShardBytes is the key and value bytes each new shard's store
	// holds (headers aside).
	NewShardBytes []int64 `json:"new_shard_bytes,omitempty"`

	// SpaceNeeded is an estimate of the free space the real run needs
	// in the data directory's filesystem (bytes).
	SpaceNeeded int64 `json:"space_needed_bytes"`
	// Spilled reports whether the plan outgrew the memory budget and
	// went to a scratch store. (Whether the sort of the new stores' keys
	// went to scratch chunks is not said: it depends on how the rewrite
	// workers shared the budget, hence on the machine's cores, and the
	// report is the same whatever their number.)
	Spilled bool    `json:"spilled"`
	Phases  []Phase `json:"phases"`

	// Plan is, for a dry run with Options.MakePlan, the plan to write
	// (MarshalPlan); it is not part of the report's JSON.
	Plan *Plan `json:"-"`
	// Kept is the kept old layout, with Options.KeepOld.
	Kept string `json:"kept,omitempty"`
	// ReportFile is where the directory keeps this report
	// (<dir>/reshard-reports/<name>, internal/switchdir/reports.go): written before the
	// switch, so that it survives whatever stops the command after it.
	// Empty for a dry run and for a run that changed no layout.
	ReportFile string `json:"report_file,omitempty"`
	// Undid is, in an undo's report, the kept report of the reshard it
	// undid (its lists reversed are this report's); "" when that reshard
	// was kept by a fusee that did not keep reports.
	Undid string `json:"undid,omitempty"`
	// ListsUnknown says that this report's lists are empty because they
	// cannot be known: the switch it finished was begun (or the layout it
	// undid was kept) by a fusee that kept no reports.
	ListsUnknown bool `json:"lists_unknown,omitempty"`

	// LogEnding says how the old directory's log ends: "closed cleanly",
	// "stopped without closing" (the engine crashed or was killed), or
	// "ended without close evidence" (closed by an older fusee). Set when
	// the directory was read for a reshard.
	LogEnding string `json:"log_ending,omitempty"`
	// DroppedTail is the old log's torn tail, dropped as the engine's own
	// recovery drops it; nil when there is none.
	DroppedTail *DroppedTail `json:"dropped_tail,omitempty"`

	// kept is the file the report was written to whole before the
	// switch, whose lists WriteJSON copies (reportkept.go); nil before.
	kept *keptLists
}

// DroppedTail is a torn log tail a reshard dropped: the bytes from Offset
// to the end of File, after the last intact batch of a log whose engine
// stopped mid-write without closing it. Batch and Shards are what the
// readable part of the dropped batch claims (its checksum failed), kept
// only as far as they continue the log; empty when the bytes start no such
// batch.
type DroppedTail struct {
	File   string         `json:"file"`
	Offset int64          `json:"offset"`
	Bytes  int64          `json:"bytes"`
	Reason string         `json:"reason"`
	Batch  uint64         `json:"batch,omitempty"`
	Shards []DroppedShard `json:"shards,omitempty"`
}

// DroppedShard is one shard's entries in a dropped batch: LSNs FirstLSN to
// LastLSN.
type DroppedShard struct {
	Shard    int    `json:"shard"`
	FirstLSN uint64 `json:"first_lsn"`
	LastLSN  uint64 `json:"last_lsn"`
}

// ReportVersion is the version of the report's JSON schema.
const ReportVersion = 1

// Counts are the report's totals.
type Counts struct {
	// Runs by state (running, parked, finished, tombstone), all of them.
	Runs map[string]int64 `json:"runs_by_state"`
	// RunsMoved counts runs whose shard changed.
	RunsMoved int64 `json:"runs_moved"`
	// RunsRenumbered counts runs whose number changed (finished ones too).
	RunsRenumbered int64 `json:"runs_renumbered"`
	// Records counts journal records, archives' included.
	Records int64 `json:"records"`
	// RefsRewritten counts run references whose value changed.
	RefsRewritten int64 `json:"references_rewritten"`
	// DanglingRefs counts references to runs that do not exist; they now
	// name the reserved number no run is ever given.
	DanglingRefs  int64 `json:"dangling_references"`
	Outbox        int64 `json:"outbox_messages"`
	OutboxMoved   int64 `json:"outbox_messages_moved"`
	Dedup         int64 `json:"dedup_entries"`
	DedupMoved    int64 `json:"dedup_entries_moved"`
	Archives      int64 `json:"archives_rewritten"`
	Timers        int64 `json:"timers"`
	PendingTokens int64 `json:"pending_tokens"`
	BytesRead     int64 `json:"bytes_read"`
	BytesWritten  int64 `json:"bytes_written"`
}

// add adds o's counts of pass 2 (a rewrite worker's) to c; Runs,
// RunsMoved, RunsRenumbered and BytesRead are the plan's and stay.
func (c *Counts) add(o *Counts) {
	c.Records += o.Records
	c.RefsRewritten += o.RefsRewritten
	c.DanglingRefs += o.DanglingRefs
	c.Outbox += o.Outbox
	c.OutboxMoved += o.OutboxMoved
	c.Dedup += o.Dedup
	c.DedupMoved += o.DedupMoved
	c.Archives += o.Archives
	c.Timers += o.Timers
	c.PendingTokens += o.PendingTokens
	c.BytesWritten += o.BytesWritten
}

// RenumberedRun is an unfinished run whose number changed.
type RenumberedRun struct {
	WorkflowID string `json:"workflow_id"`
	OldShard   int    `json:"old_shard"`
	OldRun     uint64 `json:"old_run"`
	NewShard   int    `json:"new_shard"`
	NewRun     uint64 `json:"new_run"`
	// OldKey and NewKey are the Ctx::key values with the position left
	// out: every key of the run was OldKey+<position> and is now
	// NewKey+<position>.
	OldKey string `json:"old_key_prefix"`
	NewKey string `json:"new_key_prefix"`
	// Tokens are the run's pending async completions: the token each
	// answered to before the reshard and the one it answers to now (the
	// same changes as in token_changes, here beside the key change).
	Tokens []RunToken `json:"pending_tokens"`
}

// RunToken is one pending async completion of a renumbered run.
type RunToken struct {
	Position uint32 `json:"position"`
	Old      string `json:"old_token"`
	New      string `json:"new_token"`
}

// TokenChange is a pending async completion's token, before and after.
type TokenChange struct {
	WorkflowID string `json:"workflow_id"`
	Position   uint32 `json:"position"`
	Old        string `json:"old_token"`
	New        string `json:"new_token"`
}

// Phase is one step of the reshard and its wall time.
type Phase struct {
	Name    string        `json:"name"`
	Seconds float64       `json:"seconds"`
	elapsed time.Duration `json:"-"`
}

package check

import (
	"fmt"
	"sort"

	"github.com/fusee-dev/fusee/journal/model"
)

// Severity says how bad a finding is.
type Severity string

// Severities. Errors and warnings make `fusee verify` fail; info does not.
const (
	SeverityError   Severity = "error"   // an invariant the engine relies on is broken
	SeverityWarning Severity = "warning" // a heuristic saw something that should not happen
	SeverityInfo    Severity = "info"    // worth knowing, not a problem
)

// Kind is the stable id of a kind of finding. Scripts match on it; never
// rename one.
type Kind string

// Finding kinds. Each comment says what is checked; kindInfo holds the
// severity and the hint printed with it.
const (
	// Directory and recovery.
	KindShardCount    Kind = "shard-count"    // shard count of the state or a checkpoint != fusee.meta's
	KindShardIndex    Kind = "shard-index"    // the shard in slot i says it is another shard
	KindCheckpointLSN Kind = "checkpoint-lsn" // a checkpoint's LSN is past its shard's LSN
	KindRecovery      Kind = "recovery"       // the recovery report disagrees with the recovered state
	KindTornTail      Kind = "torn-tail"      // (info) recovery dropped a torn log tail: the engine stopped mid-write, no clean close followed
	KindLogNotClosed  Kind = "log-not-closed" // (info) the log carries no clean-close evidence: the engine stopped, or an older fusee closed it
	KindExtraStore    Kind = "extra-store"    // (warning) a shards/NNNN at or beyond fusee.meta's shard count

	// Run numbers and placement.
	KindRunKeyMismatch    Kind = "run-key-mismatch"    // a run stored under number k says it is number j
	KindRunNumberInvalid  Kind = "run-number-invalid"  // run number 0, or NoSuchRun (reserved) or above
	KindRunNumberUnissued Kind = "run-number-unissued" // run number >= the shard's NextRun
	KindNextRunInvalid    Kind = "next-run-invalid"    // the shard's NextRun is 0 or past NoSuchRun
	KindWrongShard        Kind = "wrong-shard"         // ShardOf(workflow ID, N) != the shard holding the run

	// A run against its own journal.
	KindRunState      Kind = "run-state"        // unknown run state value
	KindRunHeader     Kind = "run-header"       // run entry (ID, gen, type, times, status) disagrees with its Start/Done records
	KindStateJournal  Kind = "state-journal"    // state disagrees with the journal (finished <=> Done last; tombstone <=> archived)
	KindJournalEmpty  Kind = "journal-empty"    // a run that is not a tombstone has no records
	KindJournalStart  Kind = "journal-start"    // the first record is not Start, or a Start record later
	KindJournalPos    Kind = "journal-pos"      // a record's Pos is not its index
	KindJournalKind   Kind = "journal-kind"     // unknown record kind
	KindJournalDone   Kind = "journal-done"     // a Done record that is not the last, or more than one
	KindCompletion    Kind = "completion"       // a completion's Ref is not an earlier record of the kind it completes, or two waits consume one signal
	KindCompletionDup Kind = "completion-twice" // two records complete the same position
	KindRecordFields  Kind = "record-fields"    // a record lacks a field its kind requires or has an invalid value
	KindArchiveOrphan Kind = "archive-orphan"   // an archived history whose run is missing or not a tombstone

	// ID index and generations.
	KindIndexMissingRun  Kind = "index-missing-run"     // an index entry names a run the shard does not have
	KindIndexWrongID     Kind = "index-wrong-id"        // an index entry names a run of another workflow ID
	KindIndexNotLatest   Kind = "index-not-latest"      // an index entry is not the highest generation of its ID
	KindIndexMissingID   Kind = "index-missing-id"      // a run's workflow ID has no index entry
	KindGenDuplicate     Kind = "gen-duplicate"         // two runs of one ID share a generation
	KindGenGap           Kind = "gen-gap"               // an ID's generations are not 1..k
	KindGenOrder         Kind = "gen-order"             // a later generation has a lower run number, and neither run was renumbered
	KindSupersededActive Kind = "superseded-unfinished" // a run that is not its ID's latest is not finished

	// References.
	KindRefBadShard   Kind = "ref-bad-shard"   // a reference names a shard that does not exist
	KindRefUnissued   Kind = "ref-unissued"    // a reference names a run number its shard never handed out
	KindRefWrongShard Kind = "ref-wrong-shard" // a reference's shard is not where its workflow ID lives
	KindRefDangling   Kind = "ref-dangling"    // (info) a reference names a run that no longer exists, or NoSuchRun
	KindParent        Kind = "parent-mismatch" // a child's parent reference does not land on a Child record naming it
	KindOrigin        Kind = "origin-mismatch" // Start's origin disagrees with its parent/predecessor references
	KindPred          Kind = "pred-mismatch"   // a predecessor is not the previous generation, or not ended the way the origin says
	KindNext          Kind = "next-mismatch"   // a continue-as-new/reset's next run is not the next generation naming it back
	KindKey           Kind = "key-mismatch"    // a Ctx::key value does not name its own run
	KindToken         Kind = "token-mismatch"  // a completion token does not name its shard's store generation, its own run and Async position
	KindCaller        Kind = "caller-mismatch" // an update's caller reference names a run of another workflow ID

	// Outputs regenerated from journals.
	KindTimerMissing   Kind = "timer-missing"     // a pending timer the journals imply is not in the timer index
	KindTimerStale     Kind = "timer-stale"       // the timer index holds a timer no journal implies
	KindOutboxKey      Kind = "outbox-key"        // an outbox message stored under another ID
	KindOutboxKind     Kind = "outbox-kind"       // unknown message kind, or empty target
	KindOutboxSeq      Kind = "outbox-seq"        // sequence number 0, >= NextSeq, or shared
	KindOutboxFrom     Kind = "outbox-from"       // the sender is not a run of this shard
	KindOutboxParent   Kind = "outbox-parent"     // a result or child start without the parent position it is for, or the parent's workflow ID
	KindOutboxSource   Kind = "outbox-source"     // no record of the sender produces this message, or it differs from what it produced
	KindMsgIDDuplicate Kind = "msg-id-duplicate"  // one message ID produced twice, or in two outboxes
	KindMsgIDRunNumber Kind = "msg-id-run-number" // (warning) a message ID contains text derived from a run number
	KindSeenWrongShard Kind = "seen-wrong-shard"  // a receiver dedup entry's workflow ID is empty or belongs on another shard

	// Reading.
	KindUnreadable Kind = "unreadable" // recovery refused the directory (a damaged store or log); nothing else was checked
)

type kindInfo struct {
	sev  Severity
	hint string
}

const (
	hintRestore = "the directory is damaged; restore it from a backup"
	// A finished reshard deletes the old shards, so it cannot be redone
	// from them; and it checks its output before switching, so damage of
	// this kind after one is a bug worth a report.
	hintReshard = "a reshard or a copy between directories went wrong; restore from a backup (a finished reshard keeps no copy of the old shards); if `fusee reshard` wrote this directory, keep it and report a fusee bug"
	hintEngine  = "the engine wrote an inconsistent state; keep the directory for a bug report and restore from a backup"
)

var kinds = map[Kind]kindInfo{
	KindShardCount:    {SeverityError, "fusee.meta and the shards disagree on the shard count; do not open it with the engine, restore from a backup"},
	KindShardIndex:    {SeverityError, "a shard directory was moved or copied into the wrong slot; " + hintRestore},
	KindCheckpointLSN: {SeverityError, "a checkpoint claims log entries the shard does not have; " + hintRestore},
	KindRecovery:      {SeverityError, "recovery and the state it produced disagree; report this as a fusee bug"},
	KindTornTail:      {SeverityInfo, "the engine stopped while writing this batch and never closed the log; a batch is acknowledged only once written whole, so if the stop was a crash or kill it was never acknowledged; the log cannot tell that from damage to its last batch: if the engine was shut down cleanly, restore from a backup"},
	KindLogNotClosed:  {SeverityInfo, "without a clean close the log cannot prove that nothing was lost after its end: if it was written by an engine that records clean closes (as this fusee's log library does) and was shut down cleanly, segments are missing: restore from a backup"},
	KindExtraStore:    {SeverityWarning, "the engine never opens it; if fusee.meta's shards= is right, a copy or a change of shard count left it: move it out of the directory; if it belongs, fusee.meta is wrong: restore fusee.meta from a backup"},

	KindRunKeyMismatch:    {SeverityError, hintRestore},
	KindRunNumberInvalid:  {SeverityError, hintRestore},
	KindRunNumberUnissued: {SeverityError, "the shard's next run number would be handed out again; " + hintRestore},
	KindNextRunInvalid:    {SeverityError, hintRestore},
	KindWrongShard:        {SeverityError, hintReshard},

	KindRunState:      {SeverityError, hintRestore},
	KindRunHeader:     {SeverityError, hintEngine},
	KindStateJournal:  {SeverityError, hintEngine},
	KindJournalEmpty:  {SeverityError, hintRestore},
	KindJournalStart:  {SeverityError, hintRestore},
	KindJournalPos:    {SeverityError, hintRestore},
	KindJournalKind:   {SeverityError, "a record of a kind this build does not know: use a newer fusee, or restore from a backup"},
	KindJournalDone:   {SeverityError, hintEngine},
	KindCompletion:    {SeverityError, hintEngine},
	KindCompletionDup: {SeverityError, hintEngine},
	KindRecordFields:  {SeverityError, hintEngine},
	KindArchiveOrphan: {SeverityError, "history kept for a run that is not a tombstone; " + hintEngine},

	KindIndexMissingRun:  {SeverityError, "lookups by workflow ID will fail; " + hintEngine},
	KindIndexWrongID:     {SeverityError, "lookups by workflow ID will find the wrong run; " + hintEngine},
	KindIndexNotLatest:   {SeverityError, "signals and cancels would go to an older run; " + hintEngine},
	KindIndexMissingID:   {SeverityError, "the workflow cannot be found by its ID; " + hintEngine},
	KindGenDuplicate:     {SeverityError, "the dump and reshard cannot tell these runs apart; " + hintEngine},
	KindGenGap:           {SeverityError, hintEngine},
	KindGenOrder:         {SeverityError, "only a reshard may number an older run above a newer one, and it flags the run it renumbered; " + hintReshard},
	KindSupersededActive: {SeverityError, "two runs of one workflow ID would both be live; " + hintEngine},

	KindRefBadShard:   {SeverityError, hintReshard},
	KindRefUnissued:   {SeverityError, "a later run would be mistaken for the one meant; " + hintReshard},
	KindRefWrongShard: {SeverityError, hintReshard},
	KindRefDangling:   {SeverityInfo, "the run it named ended its retention (or a reshard found it gone and wrote the reserved number for no run); results or replies for it are dropped"},
	KindParent:        {SeverityError, "the child's result would go to the wrong place; " + hintReshard},
	KindOrigin:        {SeverityError, hintEngine},
	KindPred:          {SeverityError, hintReshard},
	KindNext:          {SeverityError, hintReshard},
	KindKey:           {SeverityError, "workflow code would see a Ctx::key of another run; " + hintReshard},
	KindToken:         {SeverityError, "the completion could never be answered; " + hintReshard},
	KindCaller:        {SeverityError, "the update's result would go to the wrong run; " + hintReshard},

	KindTimerMissing:   {SeverityError, "a timer would never fire; the engine rebuilds timers from journals when its index is dropped, report this as a bug"},
	KindTimerStale:     {SeverityError, "a timer would fire for nothing; the engine rebuilds timers from journals when its index is dropped, report this as a bug"},
	KindOutboxKey:      {SeverityError, hintRestore},
	KindOutboxKind:     {SeverityError, "the message cannot be routed; " + hintRestore},
	KindOutboxSeq:      {SeverityError, "messages could be resent out of order or overwritten; " + hintEngine},
	KindOutboxFrom:     {SeverityError, "a result or reply would name a sender that does not exist; " + hintReshard},
	KindOutboxParent:   {SeverityError, "the result has nowhere to go; " + hintEngine},
	KindOutboxSource:   {SeverityError, "the message is not what its sender's journal says it sent; " + hintReshard},
	KindMsgIDDuplicate: {SeverityError, "receivers would drop one of the messages as a repeat; " + hintEngine},
	KindSeenWrongShard: {SeverityError, "a repeat of the message would reach a shard without this entry and be taken as new; " + hintReshard},
	KindMsgIDRunNumber: {SeverityWarning, "receivers dedup by message ID, so an ID with a run number breaks after a renumbering reshard; report this as an engine bug"},

	KindUnreadable: {SeverityError, "recovery refused the directory, so nothing else could be checked; do what the message says (a damaged log or store means restoring from a backup)"},
}

// Severity returns the severity of findings of kind k.
func (k Kind) Severity() Severity { return kinds[k].sev }

// Hint returns what an operator should do about findings of kind k.
func (k Kind) Hint() string { return kinds[k].hint }

// Kinds lists every finding kind, sorted.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Finding is one problem (or notable fact) Verify found. Shard is -1 for a
// finding about the whole directory; Run is 0 for one about a whole shard.
type Finding struct {
	Kind     Kind        `json:"kind"`
	Severity Severity    `json:"severity"`
	Shard    int         `json:"shard"`
	Run      model.RunNo `json:"run,omitempty"`
	Detail   string      `json:"detail"`
	Hint     string      `json:"hint"`
}

// Problem reports whether f should make verify fail (error or warning).
func (f Finding) Problem() bool { return f.Severity != SeverityInfo }

// Where says what the finding is about: "directory", "shard 3" or
// "shard 3 run 17".
func (f Finding) Where() string {
	switch {
	case f.Shard < 0:
		return "directory"
	case f.Run == 0:
		return fmt.Sprintf("shard %d", f.Shard)
	}
	return fmt.Sprintf("shard %d run %d", f.Shard, f.Run)
}

// String is the text form `fusee verify` prints:
// "shard 3 run 17: kind: detail (hint)".
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s (%s)", f.Where(), f.Kind, f.Detail, f.Hint)
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Detail < b.Detail
	})
}

// UnreadableFinding is the one finding for a directory that recovery
// refused (a damaged store or log): nothing else could be checked.
func UnreadableFinding(err error) Finding {
	return Finding{Kind: KindUnreadable, Severity: KindUnreadable.Severity(), Shard: -1,
		Detail: err.Error(), Hint: KindUnreadable.Hint()}
}

package check

import (
	"context"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// Summary is what `fusee inspect` shows. Its JSON field names are stable:
// scripts read them.
type Summary struct {
	Dir        string `json:"dir,omitempty"`
	Format     string `json:"format"`     // fusee.meta format=
	LogFormat  int    `json:"log_format"` // fusee.meta log=
	ShardCount int    `json:"shards"`     // fusee.meta shards=
	// TornTail describes a torn, never-acknowledged log tail recovery
	// dropped; empty when there was none.
	TornTail string `json:"torn_tail,omitempty"`
	// LogSegments and LogBytes size the shared write-ahead log; -1 when
	// not read from a directory.
	LogSegments int            `json:"log_segments"`
	LogBytes    int64          `json:"log_bytes"`
	Total       ShardSummary   `json:"total"` // sums over the shards (Shard is -1, LSNs are 0)
	Shards      []ShardSummary `json:"per_shard"`
	// Oldest and Newest are the runs with the earliest and latest start
	// time (ties: workflow ID, then generation); nil without runs.
	Oldest *RunSummary `json:"oldest_run,omitempty"`
	Newest *RunSummary `json:"newest_run,omitempty"`
}

// ShardSummary counts one shard's content.
type ShardSummary struct {
	Shard         int    `json:"shard"`
	LSN           uint64 `json:"lsn"`
	CheckpointLSN uint64 `json:"checkpoint_lsn"`
	// TailEntries is the number of log entries after the checkpoint that
	// recovery replayed (the log tail). -1 when no recovery report says.
	TailEntries int `json:"tail_entries"`
	// TailBytes is the encoded size of that tail; -1 when not known.
	TailBytes int64 `json:"tail_bytes"`
	// StoreBytes is the disk space the shard's store uses; -1 when not
	// known.
	StoreBytes int64       `json:"store_bytes"`
	NextRun    model.RunNo `json:"next_run"`

	Runs      int `json:"runs"`
	Running   int `json:"running"`
	Parked    int `json:"parked"`
	Finished  int `json:"finished"`
	Tombstone int `json:"tombstone"`
	// Renumbered counts runs a reshard gave a new number.
	Renumbered int `json:"renumbered"`

	Outbox         int `json:"outbox"`          // unacknowledged messages
	Archives       int `json:"archives"`        // archived histories
	ArchiveRecords int `json:"archive_records"` // records in them
	Seen           int `json:"dedup_entries"`   // receiver dedup entries
	Timers         int `json:"pending_timers"`
}

// RunSummary names one run both ways: logically and physically.
type RunSummary struct {
	WorkflowID string      `json:"workflow_id"`
	Gen        uint32      `json:"gen"`
	Shard      int         `json:"shard"`
	Run        model.RunNo `json:"run"`
	State      string      `json:"state"`
	Started    int64       `json:"started"`
}

// Inspect summarises st. It only reads.
func Inspect(st *State) Summary {
	sum, _ := st.view(Options{}).inspect(context.Background())
	return sum
}

// Inspect summarises the directory d, one run at a time.
func (d *Dir) Inspect(ctx context.Context) (Summary, error) {
	return d.view(Options{}).inspect(ctx)
}

// runBefore orders runs by start time, then workflow ID and generation.
func runBefore(a, b *RunSummary) bool {
	if a.Started != b.Started {
		return a.Started < b.Started
	}
	if a.WorkflowID != b.WorkflowID {
		return a.WorkflowID < b.WorkflowID
	}
	return a.Gen < b.Gen
}

func (w *view) inspect(ctx context.Context) (Summary, error) {
	sum := Summary{Dir: w.dir, Format: w.format, LogFormat: w.logFormat, ShardCount: w.shardCount,
		LogSegments: -1, LogBytes: -1, Total: ShardSummary{Shard: -1}}
	stats := map[int]journal.ShardStats{}
	if w.stats != nil {
		sum.LogSegments, sum.LogBytes = w.stats.LogSegments, w.stats.LogBytes
		for _, ss := range w.stats.Shards {
			stats[ss.Shard] = ss
		}
	}
	recov := map[int]journal.ShardRecovery{}
	if w.rec != nil {
		sum.TornTail = w.rec.TornTail
		for _, sr := range w.rec.Shards {
			recov[sr.Shard] = sr
		}
	}
	for slot, src := range w.srcs {
		if src == nil {
			continue
		}
		in := w.infos[slot]
		ss := ShardSummary{Shard: in.Index, LSN: in.LSN, CheckpointLSN: in.LSN, TailEntries: -1, TailBytes: -1, StoreBytes: -1,
			NextRun: in.NextRun}
		if sr, ok := recov[in.Index]; ok {
			ss.CheckpointLSN, ss.TailEntries = sr.CheckpointLSN, sr.Replayed
		}
		if x, ok := stats[in.Index]; ok {
			ss.CheckpointLSN, ss.TailEntries, ss.TailBytes = x.Checkpoint.LSN, x.TailEntries, x.TailBytes
			ss.StoreBytes = int64(x.StoreBytes)
		}
		err := src.runs(ctx, func(_ model.RunNo, r *model.Run, h []model.Record, archived bool) error {
			ss.Runs++
			switch r.State {
			case model.StateRunning:
				ss.Running++
			case model.StateParked:
				ss.Parked++
			case model.StateFinished:
				ss.Finished++
			case model.StateTombstone:
				ss.Tombstone++
				if archived {
					ss.Archives++
					ss.ArchiveRecords += len(h)
				}
			}
			if r.Renumbered {
				ss.Renumbered++
			}
			rs := RunSummary{WorkflowID: r.WorkflowID, Gen: r.Gen, Shard: in.Index, Run: r.No, State: r.State.String(), Started: r.Started}
			if sum.Oldest == nil || runBefore(&rs, sum.Oldest) {
				sum.Oldest = &rs
			}
			if sum.Newest == nil || runBefore(sum.Newest, &rs) {
				c := rs
				sum.Newest = &c
			}
			return nil
		})
		if err != nil {
			return Summary{}, err
		}
		err = src.orphans(func(no model.RunNo, _ *model.Run, records int) error {
			ss.Archives++
			ss.ArchiveRecords += records
			return nil
		})
		if err == nil {
			err = src.outbox(func(string, *model.Message) error { ss.Outbox++; return nil })
		}
		if err == nil {
			err = src.seen(func(string, string) error { ss.Seen++; return nil })
		}
		if err == nil {
			err = src.timers(func(model.TimerKey) error { ss.Timers++; return nil })
		}
		if err != nil {
			return Summary{}, err
		}
		sum.Shards = append(sum.Shards, ss)
		sum.Total.add(ss)
	}
	return sum, nil
}

// add sums a shard into a total. Tail sizes stay -1 if any shard's is
// unknown.
func (t *ShardSummary) add(s ShardSummary) {
	t.Runs += s.Runs
	t.Running += s.Running
	t.Parked += s.Parked
	t.Finished += s.Finished
	t.Tombstone += s.Tombstone
	t.Renumbered += s.Renumbered
	t.Outbox += s.Outbox
	t.Archives += s.Archives
	t.ArchiveRecords += s.ArchiveRecords
	t.Seen += s.Seen
	t.Timers += s.Timers
	t.TailEntries = addKnown(t.TailEntries, s.TailEntries)
	t.TailBytes = int64(addKnown(int(t.TailBytes), int(s.TailBytes)))
	t.StoreBytes = int64(addKnown(int(t.StoreBytes), int(s.StoreBytes)))
}

func addKnown(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

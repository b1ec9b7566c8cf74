package sim

import (
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// Census counts what a set of shards holds: runs by state and status,
// records by kind (journals and archives), origins, messages by kind,
// references by kind. gen reports it and the tests use it to check that a
// generated directory exercises the whole format.
type Census struct {
	Runs        int            `json:"runs"`
	States      map[string]int `json:"states"`
	Statuses    map[string]int `json:"statuses"` // how finished and tombstoned runs ended
	Origins     map[string]int `json:"origins"`
	Types       map[string]int `json:"types"`
	Records     map[string]int `json:"records"`
	Messages    map[string]int `json:"messages"`
	Refs        map[string]int `json:"refs"`
	Seen        int            `json:"seen"`
	SeenUnacked int            `json:"seen_unacked"` // outbox messages their receiver has already seen
	Timers      int            `json:"timers"`
	Archived    int            `json:"archived_records"`
}

// Reference kinds the census counts.
const (
	RefParent       = "start.parent"  // a child's Start names its parent's waiting position
	RefPred         = "start.pred"    // continue-as-new, reset, restart
	RefNext         = "done.next"     // continue-as-new, reset
	RefCancelBy     = "cancel.by"     // a cancel sent by another run
	RefSignalBy     = "signal.by"     // a signal sent by another run
	RefKey          = "step.key"      // Ctx::key
	RefToken        = "async.token"   // completion token
	RefCaller       = "update.caller" // an update called by another run
	RefMsgFrom      = "message.from"
	RefMsgParent    = "message.parent"
	RefUpdateExtern = "update.external" // an update from outside (zero caller): not a reference, counted to show both kinds
)

func newCensus() *Census {
	return &Census{States: map[string]int{}, Statuses: map[string]int{}, Origins: map[string]int{},
		Types: map[string]int{}, Records: map[string]int{}, Messages: map[string]int{}, Refs: map[string]int{}}
}

// TakeCensus counts the shards' contents.
func TakeCensus(shards []*model.Shard) *Census {
	c := newCensus()
	n := len(shards)
	for _, s := range shards {
		c.Seen += len(s.Seen)
		c.Timers += len(s.Timers)
		for no, r := range s.Runs {
			c.run(r, s.Archive[no])
		}
		for _, m := range s.Outbox {
			c.message(m)
			if _, ok := shards[model.ShardOf(m.Target, n)].Seen[m.ID]; ok {
				c.SeenUnacked++
			}
		}
	}
	return c
}

func (c *Census) run(r *model.Run, archive []model.Record) {
	c.Runs++
	c.States[r.State.String()]++
	c.Types[r.Type]++
	if r.State == model.StateFinished || r.State == model.StateTombstone {
		c.Statuses[r.Status.String()]++
	}
	j := r.Journal
	if r.State == model.StateTombstone {
		j = archive
		c.Archived += len(j)
	}
	for i := range j {
		c.record(&j[i])
	}
}

func (c *Census) message(m *model.Message) {
	c.Messages[m.Kind.String()]++
	if !m.From.IsZero() {
		c.Refs[RefMsgFrom]++
	}
	if !m.Parent.IsZero() {
		c.Refs[RefMsgParent]++
	}
}

// CensusOfDir counts what the closed directory dir of count shards holds,
// streaming each shard (its store with its log tail): in memory it holds
// one run at a time and the IDs of the messages in flight. It counts what
// TakeCensus counts of the recovered shards.
func CensusOfDir(ctx context.Context, fs vfs.FS, dir string, count int) (*Census, error) {
	return censusOfDir(ctx, fs, dir, count, nil)
}

// censusOfDir is CensusOfDir telling progress (if not nil) how many shards
// of count its pass over the runs has read.
func censusOfDir(ctx context.Context, fs vfs.FS, dir string, count int, progress func(done, total int)) (*Census, error) {
	headers := make([]model.CheckpointHeader, count)
	for i := range headers {
		h, err := store.ReadHeader(fs, dir, i, count)
		if err != nil {
			return nil, err
		}
		headers[i] = h
	}
	tails, _, err := journal.ReadTails(ctx, fs, dir, headers)
	if err != nil {
		return nil, err
	}
	c := newCensus()
	// First pass: the outboxes, and which message IDs each receiving
	// shard must be asked about.
	inFlight := make([]map[string]struct{}, count)
	for i := range inFlight {
		inFlight[i] = map[string]struct{}{}
	}
	each := func(fn func(i int, sr *store.ShardReader) error) error {
		for i := range count {
			sr, err := store.OpenShardReader(fs, dir, i, count, &tails[i])
			if err != nil {
				return err
			}
			if err := errors.Join(fn(i, sr), sr.Close()); err != nil {
				return err
			}
		}
		return nil
	}
	err = each(func(_ int, sr *store.ShardReader) error {
		return sr.Outbox(func(m *model.Message) error {
			c.message(m)
			inFlight[model.ShardOf(m.Target, count)][m.ID] = struct{}{}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	err = each(func(i int, sr *store.ShardReader) error {
		if err := sr.Runs(ctx, func(r *model.Run, archive []model.Record) error {
			c.run(r, archive)
			return nil
		}); err != nil {
			return err
		}
		if err := sr.Seen(func(id, _ string) error {
			c.Seen++
			if _, ok := inFlight[i][id]; ok {
				c.SeenUnacked++
			}
			return nil
		}); err != nil {
			return err
		}
		if err := sr.Timers(func(model.TimerKey) error { c.Timers++; return nil }); err != nil {
			return err
		}
		if progress != nil {
			progress(i+1, count)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Census) record(r *model.Record) {
	c.Records[r.Kind.String()]++
	switch r.Kind {
	case model.KindStart:
		c.Origins[r.Origin.String()]++
		if !r.Parent.IsZero() {
			c.Refs[RefParent]++
		}
		if !r.Pred.IsZero() {
			c.Refs[RefPred]++
		}
	case model.KindDone:
		if !r.Next.IsZero() {
			c.Refs[RefNext]++
		}
	case model.KindCancel:
		if !r.By.IsZero() {
			c.Refs[RefCancelBy]++
		}
	case model.KindSignal:
		if !r.By.IsZero() {
			c.Refs[RefSignalBy]++
		}
	case model.KindStep:
		if r.Key.WorkflowID != "" {
			c.Refs[RefKey]++
		}
	case model.KindAsync:
		if r.Token.Run != 0 {
			c.Refs[RefToken]++
		}
	case model.KindUpdate:
		if r.Parent.IsZero() {
			c.Refs[RefUpdateExtern]++
		} else {
			c.Refs[RefCaller]++
		}
	}
}

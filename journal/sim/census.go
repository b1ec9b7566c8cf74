package sim

import "github.com/fusee-dev/fusee/journal"

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

// TakeCensus counts the shards' contents.
func TakeCensus(shards []*journal.Shard) *Census {
	c := &Census{States: map[string]int{}, Statuses: map[string]int{}, Origins: map[string]int{},
		Types: map[string]int{}, Records: map[string]int{}, Messages: map[string]int{}, Refs: map[string]int{}}
	n := len(shards)
	for _, s := range shards {
		c.Seen += len(s.Seen)
		c.Timers += len(s.Timers)
		for no, r := range s.Runs {
			c.Runs++
			c.States[r.State.String()]++
			c.Types[r.Type]++
			if r.State == journal.StateFinished || r.State == journal.StateTombstone {
				c.Statuses[r.Status.String()]++
			}
			j := r.Journal
			if r.State == journal.StateTombstone {
				j = s.Archive[no]
				c.Archived += len(j)
			}
			for i := range j {
				c.record(&j[i])
			}
		}
		for _, m := range s.Outbox {
			c.Messages[m.Kind.String()]++
			if !m.From.IsZero() {
				c.Refs[RefMsgFrom]++
			}
			if !m.Parent.IsZero() {
				c.Refs[RefMsgParent]++
			}
			if _, ok := shards[journal.ShardOf(m.Target, n)].Seen[m.ID]; ok {
				c.SeenUnacked++
			}
		}
	}
	return c
}

func (c *Census) record(r *journal.Record) {
	c.Records[r.Kind.String()]++
	switch r.Kind {
	case journal.KindStart:
		c.Origins[r.Origin.String()]++
		if !r.Parent.IsZero() {
			c.Refs[RefParent]++
		}
		if !r.Pred.IsZero() {
			c.Refs[RefPred]++
		}
	case journal.KindDone:
		if !r.Next.IsZero() {
			c.Refs[RefNext]++
		}
	case journal.KindCancel:
		if !r.By.IsZero() {
			c.Refs[RefCancelBy]++
		}
	case journal.KindSignal:
		if !r.By.IsZero() {
			c.Refs[RefSignalBy]++
		}
	case journal.KindStep:
		if r.Key.WorkflowID != "" {
			c.Refs[RefKey]++
		}
	case journal.KindAsync:
		if r.Token.Run != 0 {
			c.Refs[RefToken]++
		}
	case journal.KindUpdate:
		if r.Parent.IsZero() {
			c.Refs[RefUpdateExtern]++
		} else {
			c.Refs[RefCaller]++
		}
	}
}

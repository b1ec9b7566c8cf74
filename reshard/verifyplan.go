package reshard

import (
	"context"
	"fmt"
	"iter"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
)

// PlanCheck is what VerifyPlan found: the differences between a
// directory and the plan it was resharded by (none: it is what the plan
// said).
type PlanCheck struct {
	Dir         string   `json:"dir"`
	Shards      int      `json:"shards"`
	Renumbered  int      `json:"renumbered_confirmed"`
	Differences []string `json:"differences"`
}

// OK reports whether the directory is what the plan said.
func (c *PlanCheck) OK() bool { return len(c.Differences) == 0 }

// maxDifferences bounds the list: past it, one line says how many more.
const maxDifferences = 100

// VerifyPlan checks, read-only, that the closed directory dir is what
// plan said a reshard would make of it: its shard count, its stores'
// generation, every renumbered run (workflow ID and generation) at its
// planned new shard and number, and no new shard holding fewer runs than
// planned (the engine may have started more since). It takes the lock and
// opens every shard read-only, one at a time, through recovery. The
// plan's runs are sorted by new shard and number in a list spilling under
// scratch ("": the system temporary directory) past its share of budget,
// and joined with the shards' runs as they are read: memory does not grow
// with the plan.
func VerifyPlan(ctx context.Context, fs vfs.FS, dir string, plan *Plan, scratch string, budget int64) (*PlanCheck, error) {
	if budget <= 0 {
		budget = DefaultMemory
	}
	fs = meta.FS(fs)
	d, err := meta.Open(fs, dir, meta.Options{Log: meta.LogShared})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m := d.Meta()
	c := &PlanCheck{Dir: dir, Shards: m.Shards, Differences: []string{}}
	if m.Shards != plan.NewShards {
		c.differ("the directory has %d shards, the plan goes to %d", m.Shards, plan.NewShards)
		return c, nil
	}
	// The planned runs by new shard and number: the order the shards'
	// runs are read in.
	byNew := newList[PlannedRun](fs, listStem(fs, scratch)+"-verify", budget/mapShare)
	defer byNew.Close()
	err = plan.Renumbered.Each(func(p *PlannedRun) error {
		return byNew.add(renumberedOrder(p.NewShard, p.NewRun), *p)
	})
	if err != nil {
		return nil, err
	}
	next, stop := iter.Pull2(byNew.items())
	defer stop()
	jn := &planJoin{c: c, next: next}
	if jn.cur, err, _ = next(); err != nil {
		return nil, err
	}
	tails, _, err := logTails(ctx, fs, dir, m.Shards, nil)
	if err != nil {
		return nil, err
	}
	for j := range m.Shards {
		if err := jn.shard(ctx, fs, dir, j, m.Shards, tails, plan); err != nil {
			return nil, err
		}
	}
	for jn.cur != nil { // planned where no shard has a run
		if err := jn.meet(jn.cur.NewShard, model.RunNo(jn.cur.NewRun), "", 0); err != nil {
			return nil, err
		}
	}
	if n := len(c.Differences); n == maxDifferences {
		c.Differences = append(c.Differences, "… and possibly more (the list stops at 100)")
	}
	return c, nil
}

// differ adds a difference, up to maxDifferences.
func (c *PlanCheck) differ(format string, args ...any) {
	if len(c.Differences) < maxDifferences {
		c.Differences = append(c.Differences, fmt.Sprintf(format, args...))
	}
}

// planJoin joins the planned runs, by new shard and number, with the
// shards' runs as they are read.
type planJoin struct {
	c    *PlanCheck
	next func() (*PlannedRun, error, bool)
	cur  *PlannedRun // the next planned run not yet met; nil: none
}

// meet compares the planned runs at new (shard, no) with the run there
// (id "": none) and moves past them.
func (jn *planJoin) meet(shard int, no model.RunNo, id string, gen uint32) error {
	for jn.cur != nil && jn.cur.NewShard == shard && jn.cur.NewRun == uint64(no) {
		p := jn.cur
		switch {
		case id == "":
			jn.c.differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds no run", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun)
		case id != p.WorkflowID || gen != p.Gen:
			jn.c.differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds %s#%d", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun, id, gen)
		default:
			jn.c.Renumbered++
		}
		var err error
		if jn.cur, err, _ = jn.next(); err != nil {
			return err
		}
	}
	return nil
}

// before says whether the next planned run comes before new (shard, no).
func (jn *planJoin) before(shard int, no model.RunNo) bool {
	cur := jn.cur
	return cur != nil && (cur.NewShard < shard || cur.NewShard == shard && cur.NewRun < uint64(no))
}

// shard reads shard j's runs (of count) into the join, and checks its
// store generation and its number of runs against the plan.
func (jn *planJoin) shard(ctx context.Context, fs vfs.FS, dir string, j, count int, tails []store.ShardTail, plan *Plan) error {
	src, err := openSource(fs, dir, j, count, tails, nil, nil)
	if err != nil {
		return err
	}
	if g := src.Header().Gen; g != plan.StoreGen {
		jn.c.differ("shard %d's store is generation %d, the plan's new stores are %d", j, g, plan.StoreGen)
	}
	var runs int64
	err = src.RunEntries(ctx, func(no model.RunNo, e model.RunEntry) error {
		runs++
		for jn.before(j, no) {
			if err := jn.meet(jn.cur.NewShard, model.RunNo(jn.cur.NewRun), "", 0); err != nil {
				return err
			}
		}
		return jn.meet(j, no, e.WorkflowID, e.Gen)
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if runs < plan.Shards[j].Runs {
		jn.c.differ("shard %d holds %d runs, the plan gives it %d", j, runs, plan.Shards[j].Runs)
	}
	return nil
}

package reshard

import (
	"context"
	"fmt"
	"iter"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
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
	differ := func(format string, args ...any) {
		if len(c.Differences) < maxDifferences {
			c.Differences = append(c.Differences, fmt.Sprintf(format, args...))
		}
	}
	if m.Shards != plan.NewShards {
		differ("the directory has %d shards, the plan goes to %d", m.Shards, plan.NewShards)
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
	cur, err, _ := next() // the next planned run not yet met; nil: none
	if err != nil {
		return nil, err
	}
	// meet compares the planned runs at new (shard, no) with the run
	// there (id "": none) and moves past them.
	meet := func(shard int, no model.RunNo, id string, gen uint32) error {
		for cur != nil && cur.NewShard == shard && cur.NewRun == uint64(no) {
			p := cur
			switch {
			case id == "":
				differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds no run", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun)
			case id != p.WorkflowID || gen != p.Gen:
				differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds %s#%d", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun, id, gen)
			default:
				c.Renumbered++
			}
			if cur, err, _ = next(); err != nil {
				return err
			}
		}
		return nil
	}
	// before: whether the next planned run comes before new (shard, no).
	before := func(shard int, no model.RunNo) bool {
		return cur != nil && (cur.NewShard < shard || cur.NewShard == shard && cur.NewRun < uint64(no))
	}
	tails, err := logTails(ctx, fs, dir, m.Shards)
	if err != nil {
		return nil, err
	}
	for j := range m.Shards {
		src, err := openSource(fs, dir, j, m.Shards, tails)
		if err != nil {
			return nil, err
		}
		if g := src.Header().Gen; g != plan.StoreGen {
			differ("shard %d's store is generation %d, the plan's new stores are %d", j, g, plan.StoreGen)
		}
		var runs int64
		err = src.RunEntries(ctx, func(no model.RunNo, e model.RunEntry) error {
			runs++
			for before(j, no) {
				if err := meet(cur.NewShard, model.RunNo(cur.NewRun), "", 0); err != nil {
					return err
				}
			}
			return meet(j, no, e.WorkflowID, e.Gen)
		})
		if cerr := src.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if runs < plan.Shards[j].Runs {
			differ("shard %d holds %d runs, the plan gives it %d", j, runs, plan.Shards[j].Runs)
		}
	}
	for cur != nil { // planned where no shard has a run
		if err := meet(cur.NewShard, model.RunNo(cur.NewRun), "", 0); err != nil {
			return nil, err
		}
	}
	if n := len(c.Differences); n == maxDifferences {
		c.Differences = append(c.Differences, "… and possibly more (the list stops at 100)")
	}
	return c, nil
}

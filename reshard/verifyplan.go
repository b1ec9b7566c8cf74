package reshard

import (
	"context"
	"fmt"

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
// opens every shard read-only, one at a time, through recovery.
func VerifyPlan(ctx context.Context, fs vfs.FS, dir string, plan *Plan) (*PlanCheck, error) {
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
	type at struct {
		shard int
		no    model.RunNo
	}
	type who struct {
		id  string
		gen uint32
	}
	// got is who holds each planned number, filled as the shards are read.
	got := make(map[at]*who, len(plan.Renumbered))
	for _, p := range plan.Renumbered {
		got[at{p.NewShard, model.RunNo(p.NewRun)}] = nil
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
			if _, ok := got[at{j, no}]; ok {
				got[at{j, no}] = &who{e.WorkflowID, e.Gen}
			}
			return nil
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
	for _, p := range plan.Renumbered {
		switch w := got[at{p.NewShard, model.RunNo(p.NewRun)}]; {
		case w == nil:
			differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds no run", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun)
		case w.id != p.WorkflowID || w.gen != p.Gen:
			differ("%s#%d (old %d:%d) is not at %d:%d as planned: that number holds %s#%d", p.WorkflowID, p.Gen, p.OldShard, p.OldRun, p.NewShard, p.NewRun, w.id, w.gen)
		default:
			c.Renumbered++
		}
	}
	if n := len(c.Differences); n == maxDifferences {
		c.Differences = append(c.Differences, "… and possibly more (the list stops at 100)")
	}
	return c, nil
}

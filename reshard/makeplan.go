package reshard

import (
	"context"
	"errors"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// makePlan runs pass 1 over every old shard and assigns every run its new
// shard and number (package plan): in the compact run map when the runs
// fit its share of the budget and no plan file is made or applied (which
// read the spill maps), else through the spill maps.
//
// Its progress ("plan", in old shards) starts at 0 and reaches the last
// shard only when the plan pass is over (planPass), so that the time
// progress shows for the phase is the time the report gives it: numbering
// the runs and freezing the run map come after the last shard is read.
func (r *resharder) makePlan(ctx context.Context) (*plan.Plan, error) {
	var err error
	r.progress("plan", 0, int64(r.oldN))
	if r.tails == nil { // identify (apply.go) may have read them already
		if r.tails, err = logTails(ctx, r.fs, r.dir, r.oldN); err != nil {
			return nil, err
		}
	}
	if !r.opts.MakePlan && r.opts.Plan == nil {
		p, err := r.passOne(ctx, plan.NewCompactPass(r.oldN, r.newN, r.budget/mapShare*compactShares))
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, plan.ErrMapFull) {
			return nil, err
		}
	}
	keys := r.newMap("plan")
	defer keys.Close()
	p, err := r.passOne(ctx, plan.NewSpilledPass(r.oldN, r.newN, keys))
	if err != nil {
		return nil, err
	}
	// The rewrite looks runs up from a paged copy of the run map and its
	// reverse (plan.Plan.Page), with the reverse's share of the budget for
	// its cache (its frames are on the Go heap, under the soft limit);
	// the run map stays for the plan file. A page the cache does not hold
	// is one read, mostly from the OS page cache.
	if err := r.fs.MkdirAll(r.scratch, 0o755); err != nil {
		return nil, err
	}
	if err := p.Page(r.fs, r.fs.PathJoin(r.scratch, "runmap"), max(r.budget/mapShare, 1)); err != nil {
		return nil, err
	}
	return p, nil
}

// passOne reads every old shard's run entries into s, as many shards at
// once as pass 2 rewrites (rewriters), and assigns the numbers.
func (r *resharder) passOne(ctx context.Context, s *plan.Pass) (*plan.Plan, error) {
	err := parallel(ctx, r.oldN, r.rewriters(), func(i int) error { return r.passShard(ctx, s, i) }, func(done int) {
		if done < r.oldN {
			r.progress("plan", int64(done), int64(r.oldN))
		}
	})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Assign(r.newMap)
}

// passShard reads old shard i's run entries into s.
func (r *resharder) passShard(ctx context.Context, s *plan.Pass, i int) error {
	src, err := r.source(r.dir, i, r.oldN, r.tails)
	if err != nil {
		return err
	}
	raw, err := src.RawBytes()
	if err != nil {
		_ = src.Close()
		return err
	}
	sp := s.Shard(i, src.Header(), raw)
	err = src.RunEntries(ctx, func(no model.RunNo, run model.RunEntry) error {
		if want := model.ShardOf(run.WorkflowID, r.oldN); want != i {
			return r.damaged(i, "shard %d holds run %d of workflow %q, which belongs on shard %d", i, no, run.WorkflowID, want)
		}
		return sp.Add(no, model.ShardOf(run.WorkflowID, r.newN), &run)
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		sp.End()
	}
	return err
}

// renumberedRun is the report's line for an unfinished run that old shard
// oldShard's run oldNo became m.
func renumberedRun(wf string, oldShard int, oldNo model.RunNo, m plan.Mapped) RenumberedRun {
	return RenumberedRun{WorkflowID: wf, OldShard: oldShard, OldRun: uint64(oldNo), NewShard: m.Shard, NewRun: uint64(m.No),
		OldKey: fmt.Sprintf("%s/%d/", wf, oldNo), NewKey: fmt.Sprintf("%s/%d/", wf, m.No)}
}

package reshard

import (
	"context"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// makePlan runs pass 1 over every old shard and assigns every run its new
// shard and number (package plan): in the compact run map when the runs
// fit its share of the budget, else in the paged run map, made from the
// run files pass 1 writes once they do not. A plan file made or applied
// lists the runs from the details files pass 1 then also writes.
//
// Its progress ("plan", in old shards) starts at 0 and reaches the last
// shard only when the plan pass is over (planPass), so that the time
// progress shows for the phase is the time the report gives it: numbering
// the runs (and writing the paged run map) come after the last shard is
// read.
func (r *resharder) makePlan(ctx context.Context) (*plan.Plan, error) {
	var err error
	r.progress("plan", 0, int64(r.oldN))
	if r.tails == nil { // checkLog or identify (apply.go) may have read them already
		if r.tails, _, err = logTails(ctx, r.fs, r.dir, r.oldN, nil); err != nil {
			return nil, err
		}
	}
	s := plan.NewPass(r.fs, r.fs.PathJoin(r.scratch, "plan"), r.oldN, r.newN, r.budget/mapShare*compactShares,
		r.opts.MakePlan || r.opts.Plan != nil)
	defer s.Close()
	err = parallel(ctx, r.oldN, r.rewriters(), func(i int) error { return r.passShard(ctx, s, i) }, func(done int) {
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
	// A paged run map's cache has the shares of the budget the compact
	// map's would have in the rewrite, less the sort's: a page it does not
	// hold is one read, mostly from the OS page cache.
	return s.Assign(max(r.budget/mapShare*pagedCacheShares, 1))
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
	sp, err := s.Shard(i, src.Header(), raw)
	if err != nil {
		_ = src.Close()
		return err
	}
	// The entries are views: the pass keeps no string of them (the
	// details file copies each workflow ID).
	err = src.RunEntryViews(ctx, func(no model.RunNo, run model.RunEntry) error {
		if want := model.ShardOf(run.WorkflowID, r.oldN); want != i {
			return r.damaged(i, "shard %d holds run %d of workflow %q, which belongs on shard %d", i, no, run.WorkflowID, want)
		}
		return sp.Add(no, model.ShardOf(run.WorkflowID, r.newN), &run)
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = sp.End()
	}
	return err
}

// renumberedRun is the report's line for an unfinished run that old shard
// oldShard's run oldNo became m.
func renumberedRun(wf string, oldShard int, oldNo model.RunNo, m plan.Mapped) RenumberedRun {
	return RenumberedRun{WorkflowID: wf, OldShard: oldShard, OldRun: uint64(oldNo), NewShard: m.Shard, NewRun: uint64(m.No),
		OldKey: fmt.Sprintf("%s/%d/", wf, oldNo), NewKey: fmt.Sprintf("%s/%d/", wf, m.No)}
}

package reshard

import (
	"context"
	"fmt"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// identify reads the old directory's fingerprint, and keeps the log tails
// read on the way for the plan pass.
func (r *resharder) identify(ctx context.Context, m meta.Meta) error {
	data, err := switchdir.ReadMetaBytes(r.fs, r.dir)
	if err != nil {
		return err
	}
	fp, tails, err := switchdir.ReadFingerprint(ctx, r.fs, r.dir, m.Shards, data)
	if err != nil {
		return err
	}
	r.fp, r.tails = &fp, tails
	return nil
}

// checkPlan refuses a plan that was not made from this directory as it is
// now: another count, an unfinished switch, or a different fingerprint
// (the engine wrote since, or it is another directory). It runs before
// the reshard changes anything.
func (r *resharder) checkPlan(ctx context.Context, m meta.Meta) error {
	p := r.opts.Plan
	stale := func(diff string) error { return &StalePlanError{Dir: r.dir, Path: r.opts.PlanPath, Diff: diff} }
	if m.Switching() {
		return &StalePlanError{Dir: r.dir, Path: r.opts.PlanPath, Switching: true,
			Diff: fmt.Sprintf("a reshard from %d to %d shards is interrupted", m.OldShards, m.NewShards)}
	}
	if m.Shards != p.OldShards {
		return stale(fmt.Sprintf("it has %d shards, the plan was made for %d", m.Shards, p.OldShards))
	}
	if err := r.identify(ctx, m); err != nil {
		return err
	}
	if diff := p.Identity.Diff(*r.fp); diff != "" {
		return stale(diff)
	}
	return nil
}

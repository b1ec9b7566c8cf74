package reshard

import (
	"context"
	"fmt"
	"sync/atomic"
)

// rawBytesOfOld is what the old stores' keys and values take uncompressed
// (ShardReader.RawBytes: their tables' properties and their logs' bytes),
// read before anything is written so that the free space a run needs is
// known, and checked, before it starts: the dry run, a refusal and the
// report give one figure. checkLog usually measured every old store
// already, in the open that read its header for the log's tails
// (r.oldRaw); else it reads the old log's tails (kept for the plan) and
// opens each old store once, a worker per core (rewriters).
func (r *resharder) rawBytesOfOld(ctx context.Context) (int64, error) {
	if r.oldRaw != nil {
		var total int64
		for _, n := range r.oldRaw {
			total += int64(n)
		}
		return total, nil
	}
	if r.tails == nil { // checkLog, identify (apply.go) or Upgrade may have read them already
		var err error
		if r.tails, _, err = logTails(ctx, r.fs, r.dir, r.oldN, nil); err != nil {
			return 0, err
		}
	}
	// Each store is opened (its log tail replayed) as the passes open it,
	// so the stores are measured a worker each, as the passes read them.
	var total atomic.Int64
	err := parallel(ctx, r.oldN, r.rewriters(), func(i int) error {
		src, err := r.source(r.dir, i, r.oldN, r.tails)
		if err != nil {
			return err
		}
		raw, err := src.RawBytes()
		if cerr := src.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("measuring old shard %d: %w", i, err)
		}
		total.Add(int64(raw))
		return nil
	}, func(int) {})
	if err != nil {
		return 0, err
	}
	return total.Load(), nil
}

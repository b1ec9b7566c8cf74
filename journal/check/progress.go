package check

import (
	"context"

	"github.com/fusee-dev/fusee/journal/model"
)

// Progress. Verify and dump call Options.Progress from their passes over
// the runs, every progressEvery runs and once when a pass ends, so that a
// caller can show how far they have got. The total is the number of runs,
// counted before the first pass from the shards' run entries (phase
// "count", whose own total is the estimate from the shards' next run
// numbers): that estimate is exact for a directory that gen or the engine
// wrote, but after a reshard renumbered runs it can be several times the
// count (8->3->12->8 shards: 602,832 for 200,000 runs). Counting reads the
// run entries only, not the journals, and only when Options.Progress is
// set; a call is a counter test on the hot path.

// progressEvery is how many runs pass between calls to Options.Progress.
const progressEvery = checkEvery

// Phases the passes report.
const (
	PhaseCount = "count" // the run entries counted, for the other phases' total
	PhaseCheck = "check" // verify's pass over every run
	PhaseSort  = "sort"  // dump's first pass: the runs put in order
	PhaseWrite = "write" // dump's second pass: each run written
	PhaseJoin  = "join"  // verify's references resolved, a shard at a time (counted in shards)
)

// runsExpected is the number of runs counted (countRuns), or, before
// that, estimated from the next run numbers (see above).
func (w *view) runsExpected() int64 {
	if w.counted > 0 {
		return w.counted
	}
	var n int64
	for slot, s := range w.srcs {
		if s != nil && w.infos[slot].NextRun > 0 {
			n += int64(w.infos[slot].NextRun) - 1
		}
	}
	return n
}

// progress reports that done runs of phase are through, on every
// progressEvery-th run; total 0 stands for runsExpected.
func (w *view) progress(phase string, done, total int) {
	if w.opts.Progress == nil || done%progressEvery != 0 {
		return
	}
	t := int64(total)
	if t == 0 {
		t = w.runsExpected()
	}
	w.opts.Progress(phase, int64(done), max(t, int64(done)))
}

// progressEnd reports that phase is over after done runs.
func (w *view) progressEnd(phase string, done int) {
	if w.opts.Progress != nil {
		w.opts.Progress(phase, int64(done), int64(done))
	}
}

// countRuns counts the runs for the passes' total when progress is shown,
// reporting its own progress against the estimate.
func (w *view) countRuns(ctx context.Context) error {
	if w.opts.Progress == nil {
		return nil
	}
	n := 0
	for _, s := range w.srcs {
		if s == nil {
			continue
		}
		err := s.entries(ctx, func(model.RunNo, *model.Run) error {
			n++
			w.progress(PhaseCount, n, 0)
			return nil
		})
		if err != nil {
			return err
		}
	}
	w.progressEnd(PhaseCount, n)
	w.counted = int64(max(n, 1))
	return nil
}

// joinProgress reports the reference join's shards (PhaseJoin).
func (w *view) joinProgress(done, total int) {
	if w.opts.Progress != nil {
		w.opts.Progress(PhaseJoin, int64(done), int64(total))
	}
}

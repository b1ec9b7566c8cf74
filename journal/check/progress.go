package check

// Progress. Verify and dump call Options.Progress from their passes over
// the runs, every progressEvery runs and once when a pass ends, so that a
// caller can show how far they have got. The count of runs to expect is
// known only at the end of a first pass; until then it is estimated from
// the shards' next run numbers (every number below one was issued to a
// run, and runs are tombstoned, not deleted, so the estimate is exact for
// a directory that gen or the engine wrote and an upper bound after a
// reshard renumbered runs). A call is a counter test on the hot path: it
// costs nothing measurable.

// progressEvery is how many runs pass between calls to Options.Progress.
const progressEvery = checkEvery

// Phases the passes report.
const (
	PhaseCheck = "check" // verify's pass over every run
	PhaseSort  = "sort"  // dump's first pass: the runs put in order
	PhaseWrite = "write" // dump's second pass: each run written
)

// runsExpected estimates the number of runs (see above).
func (w *view) runsExpected() int64 {
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

package reshard_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/reshard"
)

// progressOf is which progress phases each report phase holds, in order.
var progressOf = map[string][]string{
	"plan":    {"plan"},
	"rewrite": {"rewrite", "write"},
	"check":   {"check"},
	"switch":  nil, // a few renames: no progress of its own
}

// A phaseEvent is a progress call, or the report's clock of a phase
// starting or stopping.
type phaseEvent struct {
	clock       bool
	name        string // report phase (clock) or progress phase
	stop        bool
	done, total int64
}

func (e phaseEvent) String() string {
	if e.clock {
		return fmt.Sprintf("clock %s stop=%v", e.name, e.stop)
	}
	return fmt.Sprintf("progress %s %d/%d", e.name, e.done, e.total)
}

// Each progress phase starts at 0 when its work starts and reaches its
// total once, when its work ends, so that the time progress shows for a
// phase is the time the report gives it (issue 28 item 10: a plan whose
// progress said "done in 3.24s" was reported as 15.88s: its clock started
// at the first shard read and stopped before the runs were numbered).
// Checked on the order of events, not on their times: a report phase's
// clock start is followed at once by its first progress phase's 0, its
// stop is preceded at once by its last progress phase's total, and no
// progress is shown outside the clock of the phase that holds it. What
// an order cannot show is work done between a clock's start and its
// first progress call with neither one moved: there the code keeps them
// next to each other (makePlan, build, checkNew say so).
func TestProgressPhasesMatchTheReport(t *testing.T) {
	for _, c := range []struct {
		from, to int
		dry      bool
	}{{3, 5, false}, {4, 2, false}, {3, 6, false}, {3, 5, true}} {
		t.Run(fmt.Sprintf("%d->%d dry=%v", c.from, c.to, c.dry), func(t *testing.T) {
			dir := genDir(t, c.from, 400, 51)
			var events []phaseEvent
			reshard.SetPhaseClock(func(name string, stop bool) {
				events = append(events, phaseEvent{clock: true, name: name, stop: stop})
			})
			defer reshard.SetPhaseClock(nil)
			rep := doReshard(t, dir, c.to, reshard.Options{DryRun: c.dry, Progress: func(phase string, done, total int64) {
				events = append(events, phaseEvent{name: phase, done: done, total: total})
			}})
			var clocks []string
			for _, e := range events {
				if e.clock && e.stop {
					clocks = append(clocks, e.name)
				}
			}
			var names []string
			for _, p := range rep.Phases {
				names = append(names, p.Name)
			}
			if !slices.Equal(clocks, names) {
				t.Fatalf("the clocks stopped for %v, the report has %v", clocks, names)
			}
			if err := checkPhaseEvents(events); err != nil {
				var b strings.Builder
				for _, e := range events {
					fmt.Fprintln(&b, e)
				}
				t.Fatalf("%v\nevents:\n%s", err, b.String())
			}
		})
	}
}

// checkPhaseEvents checks events against the rules of
// TestProgressPhasesMatchTheReport.
func checkPhaseEvents(events []phaseEvent) error {
	open := "" // the report phase whose clock runs
	for i, e := range events {
		switch {
		case e.clock && !e.stop:
			if open != "" {
				return fmt.Errorf("event %d: the clock of %s starts while %s's runs", i, e.name, open)
			}
			open = e.name
			if want := progressOf[e.name]; len(want) > 0 {
				if i+1 == len(events) || events[i+1] != (phaseEvent{name: want[0], total: events[i+1].total}) {
					return fmt.Errorf("event %d: the clock of %s starts, and the next event is not %s's progress at 0", i, e.name, want[0])
				}
			}
		case e.clock:
			if open != e.name {
				return fmt.Errorf("event %d: the clock of %s stops while %q's runs", i, e.name, open)
			}
			if want := progressOf[e.name]; len(want) > 0 {
				last := want[len(want)-1]
				if p := events[i-1]; p.clock || p.name != last && !(e.name == "rewrite" && p.name == "rewrite") || p.done != p.total {
					return fmt.Errorf("event %d: the clock of %s stops, and the event before is not a progress phase's total (%v)", i, e.name, p)
				}
			}
			open = ""
		default:
			if !slices.Contains(progressOf[open], e.name) {
				return fmt.Errorf("event %d: progress %s outside its report phase's clock (running: %q)", i, e.name, open)
			}
		}
	}
	return checkProgressRuns(events)
}

// checkProgressRuns checks that each progress phase starts at 0 and only
// its last call reaches the total.
func checkProgressRuns(events []phaseEvent) error {
	var calls []phaseEvent
	for _, e := range events {
		if !e.clock {
			calls = append(calls, e)
		}
	}
	for i := 0; i < len(calls); {
		first := calls[i]
		if first.done != 0 {
			return fmt.Errorf("phase %s starts at %d/%d, not at 0", first.name, first.done, first.total)
		}
		j := i
		for j+1 < len(calls) && calls[j+1].name == first.name {
			j++
		}
		for k := i; k <= j; k++ {
			if (calls[k].done == calls[k].total) != (k == j) {
				return fmt.Errorf("phase %s: call %d of %d is %d/%d: only the last may reach the total", first.name, k-i+1, j-i+1, calls[k].done, calls[k].total)
			}
		}
		i = j + 1
	}
	return nil
}

package reshard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/reshard"
)

// Each progress phase starts at 0 when its work starts and reaches its
// total once, when its work ends, so that the time progress shows for a
// phase is the time the report gives it (issue 28 item 10: a plan whose
// progress said "done in 3.24s" was reported as 15.88s: its clock started
// at the first shard read and stopped before the runs were numbered). The
// report's rewrite covers progress's rewrite and write.
func TestProgressPhasesMatchTheReport(t *testing.T) {
	for _, c := range []struct {
		from, to int
		dry      bool
	}{{3, 5, false}, {4, 2, false}, {3, 6, false}, {3, 5, true}} {
		t.Run(fmt.Sprintf("%d->%d dry=%v", c.from, c.to, c.dry), func(t *testing.T) {
			dir := genDir(t, c.from, 400, 51)
			type call struct {
				phase       string
				done, total int64
				at          time.Time
			}
			var calls []call
			rep := doReshard(t, dir, c.to, reshard.Options{DryRun: c.dry, Progress: func(phase string, done, total int64) {
				calls = append(calls, call{phase, done, total, time.Now()})
			}})
			spans := map[string]time.Duration{}
			for i := 0; i < len(calls); {
				first := calls[i]
				if first.done != 0 {
					t.Fatalf("phase %s starts at %d/%d, not at 0", first.phase, first.done, first.total)
				}
				j := i
				for j+1 < len(calls) && calls[j+1].phase == first.phase {
					j++
				}
				for k := i; k <= j; k++ {
					if (calls[k].done == calls[k].total) != (k == j) {
						t.Fatalf("phase %s: call %d of %d is %d/%d: only the last may reach the total", first.phase, k-i+1, j-i+1, calls[k].done, calls[k].total)
					}
				}
				spans[first.phase] += calls[j].at.Sub(first.at)
				i = j + 1
			}
			for _, p := range rep.Phases {
				shown := spans[p.Name]
				if p.Name == "rewrite" {
					shown += spans["write"]
				}
				if p.Name == "switch" {
					continue // a few renames: no progress of its own
				}
				if got := time.Duration(p.Seconds * float64(time.Second)); shown > got || got-shown > got/4+50*time.Millisecond {
					t.Errorf("phase %s: the report says %v, progress spans %v", p.Name, got, shown)
				}
			}
		})
	}
}

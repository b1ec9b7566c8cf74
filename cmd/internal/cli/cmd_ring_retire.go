package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringRetireOptions struct {
	epoch  int64
	census string
	maxAge time.Duration
	force  bool
	now    string
	write  ringWriteFlags
	store  ringStoreFlags
}

// ringForceRisk is what --force says before it retires without proof.
const ringForceRisk = "retiring epoch %d without a census that proves it empty: workers stop polling cells that only it used, so any instance still live in it stops making progress (its id still resolves, but nothing picks up its work)"

func newRingRetireCmd(ios *IO) *cobra.Command {
	var opts ringRetireOptions
	cmd := &cobra.Command{
		Use:   "retire (FILE | --store etcd://HOST:PORT --namespace NS) --epoch E (--census CENSUS [--max-age 5m] | --force)",
		Short: "Retire a drained epoch, when a fresh census shows it empty",
		Long: `Retire turns a DRAINING epoch RETIRED and bumps the revision. Its ring stays,
so its ids still resolve; what changes is that workers stop polling the
cells only it names ("fusee ring active-cells").

Preconditions: FILE is valid; the epoch is DRAINING (never the current
epoch, never an OPEN or RETIRED one); and the census file (--census) shows
zero live instances in the epoch, with a report from every cell of the
epoch's ring, none older than --max-age. A cell's count is the maximum over
its nodes' reports, the epoch's the sum over cells. The census format:

  fusee-census 1
  namespace orders
  report cell=cellA node=a-1 at=2026-03-01T12:00:00Z live=0:0,1:42

--force retires without a census, or despite one that does not allow it,
and says what it risks: an instance still live in the epoch stops being
worked on. --expect-revision and --dry-run work as for every write.` + ringStoreHelp,
		Example: `  fusee ring retire orders.ring --epoch 1 --census census.txt
  fusee ring retire orders.ring --epoch 1 --census census.txt --max-age 2m --expect-revision 5
  fusee ring retire orders.ring --epoch 1 --force`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "epoch"); err != nil {
				return err
			}
			if opts.epoch < 0 {
				return usagef("--epoch %d: want an epoch number, 0 or more", opts.epoch)
			}
			if opts.maxAge <= 0 {
				return usagef("--max-age %s: want a positive duration", opts.maxAge)
			}
			if opts.census == "" && !opts.force {
				return usagef("retiring needs --census CENSUS showing the epoch empty, or --force")
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingRetire(cmd.Context(), ios, &opts, st) })
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.epoch, "epoch", 0, "the draining epoch to retire (required)")
	f.StringVar(&opts.census, "census", "", "census file: live instances per epoch as every cell reported them")
	f.DurationVar(&opts.maxAge, "max-age", 5*time.Minute, "the oldest a census report may be")
	f.BoolVar(&opts.force, "force", false, "retire without a census that proves the epoch empty (see above for the risk)")
	f.StringVar(&opts.now, "now", "", "the time to judge freshness at, RFC 3339 (for tests)")
	_ = f.MarkHidden("now")
	opts.write.add(cmd)
	opts.store.add(cmd, nil)
	return cmd
}

func runRingRetire(ctx context.Context, ios *IO, opts *ringRetireOptions, st ringfile.Store) error {
	path := st.Name()
	now, err := opts.clock()
	if err != nil {
		return err
	}
	var census *ringfile.Census
	if opts.census != "" {
		if census, err = ringfile.LoadCensus(opts.census); err != nil {
			return err
		}
	}
	next, err := st.Update(ctx, opts.write.options(), func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		next, err := ringfile.Retire(cur, opts.epoch)
		if err != nil {
			return nil, err
		}
		return next, checkRingCensus(ios, opts, cur, census, now)
	})
	if err != nil {
		return ringExplainInvalidIn(st, err)
	}
	return opts.write.reportWrite(ios, st, next, fmt.Sprintf("retired epoch %d of %s in %s (revision %d); active cells (workers poll): %s",
		opts.epoch, next.Namespace, path, next.Revision, strings.Join(next.ActiveCells(), ", ")))
}

// checkRingCensus refuses unless the census allows retiring, or --force
// is given, in which case it warns with the risk and the census's problems.
func checkRingCensus(ios *IO, opts *ringRetireOptions, p *ringfile.Policy, census *ringfile.Census, now time.Time) error {
	var problems []string
	if census != nil {
		res, err := ringfile.CheckCensus(p, census, opts.epoch, now, opts.maxAge)
		if err != nil {
			return err
		}
		problems = res.Problems
	}
	if opts.force {
		if census == nil || len(problems) > 0 {
			ios.warnf(ringForceRisk, opts.epoch)
		}
		for _, pr := range problems {
			ios.warnf("%s", pr)
		}
		return nil
	}
	if len(problems) > 0 {
		return fmt.Errorf("the census does not allow retiring epoch %d:\n  %s", opts.epoch, strings.Join(problems, "\n  "))
	}
	return nil
}

func (o *ringRetireOptions) clock() (time.Time, error) {
	if o.now == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339, o.now)
	if err != nil {
		return time.Time{}, usagef("--now: %v", err)
	}
	return t, nil
}

package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringResolveOptions struct {
	json  bool
	store ringStoreFlags
}

func newRingResolveCmd(ios *IO) *cobra.Command {
	var opts ringResolveOptions
	cmd := &cobra.Command{
		Use:   "resolve (FILE | --store etcd://HOST:PORT --namespace NS) ID...",
		Short: "Print the cell each instance id lives on",
		Long: `Resolve finds each id's cell through the ring of the id's own epoch,
whatever that epoch's status (open, draining or retired: retirement is
about work, not addressing). It never guesses:

  - a legacy id (one that does not parse, e.g. wfi_...) goes to the genesis
    cell: the cell owning shard 0 in epoch 0's ring;
  - a namespace with no epoch, or an id of an epoch FILE does not have, is
    "not ready" (the file may be out of date);
  - a shard the id's epoch does not place on exactly one cell is an error,
    never a wrap onto another slot;
  - an id labelled with a cell other than its shard's owner is an error;
  - an id of another namespace is an error.

Preconditions: FILE is valid. It exits 1 if any id fails, after printing
the others. --json prints one array of {id, epoch, shard, status, cell,
region, legacy} or {id, error}.` + ringStoreHelp,
		Example: `  fusee ring resolve orders.ring orders.e2.s517.01ARZ3NDEKTSV4RRFFQ69G5FAV
  fusee ring resolve orders.ring wfi_0042 orders.ccellB.e1.s900.01ARZ3NDEKTSV4RRFFQ69G5FAV --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, ids, done, err := opts.store.open(args, 1, -1)
			if err != nil {
				return err
			}
			defer done()
			return runRingResolve(cmd.Context(), ios, opts, st, ids)
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print as JSON")
	return cmd
}

// ringResolveFailure is an id that did not resolve, in JSON.
type ringResolveFailure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

func runRingResolve(ctx context.Context, ios *IO, opts ringResolveOptions, st ringfile.Store, ids []string) error {
	p, err := ringLoad(ctx, st)
	if err != nil {
		return err
	}
	var views []any // ringfile.Resolution or ringResolveFailure
	var rows [][]string
	failed := 0
	for _, id := range ids {
		r, err := p.Resolve(id)
		if err != nil {
			failed++
			views = append(views, ringResolveFailure{ID: id, Error: err.Error()})
			if !opts.json {
				fmt.Fprintln(ios.Err, styleBad.Render("fusee: ")+err.Error())
			}
			continue
		}
		views = append(views, r)
		epoch, shard := strconv.FormatInt(r.Epoch, 10), strconv.FormatInt(r.Shard, 10)
		if r.Legacy {
			epoch, shard = "legacy", "-"
		}
		rows = append(rows, []string{id, epoch, shard, r.Status, r.Cell, ringRegionOrDash(r.Region)})
	}
	if opts.json {
		err = ios.printJSON(views)
	} else if len(rows) > 0 {
		err = ios.printTable([]string{"ID", "EPOCH", "SHARD", "STATUS", "CELL", "REGION"}, rows)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return exitSilently(ExitFailure, fmt.Sprintf("%d id(s) did not resolve", failed))
	}
	return nil
}

func ringRegionOrDash(r string) string {
	if r == "" {
		return "-"
	}
	return r
}

package cli

import (
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringPruneBindingsOptions struct {
	live  string
	write ringWriteFlags
	store ringStoreFlags
}

func newRingPruneBindingsCmd(ios *IO) *cobra.Command {
	var opts ringPruneBindingsOptions
	cmd := &cobra.Command{
		Use:   "prune-bindings (FILE | --store etcd://HOST:PORT --namespace NS) --live NODES.json",
		Short: "Remove every cell binding no live node names, freeing decommissioned cell ids",
		Long: `Prune-bindings removes every binding of the namespace that no live node
names, so that a decommissioned cell id can be claimed again, and prints
what it removed. --live is the coordinator's roster, a JSON array of the
live nodes, [{"namespace": "orders", "cell_id": "cellA"}, ...] (nodes of
other namespaces are ignored, other keys too; a node without either key
is an error), or - for standard input.

It is stricter than the reference and fails closed: a binding whose cell
an OPEN or DRAINING epoch's ring still places is kept, and listed as kept,
whatever the roster says: a node that is merely down must not lose its
cell id to another database while ids still route to its cell.

--expect-revision R, --dry-run (prints what would be removed) and --json
work as for every write.` + ringBindingsHelp + ringStoreHelp,
		Example: `  fusee ring prune-bindings orders.ring --live nodes.json
  fusee ring prune-bindings --store etcd://10.0.0.1:2379 --namespace orders --live - --dry-run < nodes.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "live"); err != nil {
				return err
			}
			live, err := ringReadLive(ios, opts.live)
			if err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error {
				var ch ringfile.BindingsChange
				p, wrote, err := ringBindingWrite(cmd.Context(), st, &opts.write, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
					next, c := ringfile.Prune(cur, live)
					ch = c
					return next, nil
				})
				if err != nil {
					return err
				}
				return printRingBindingsChange(ios, &opts.write, p, wrote, ch)
			})
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().StringVar(&opts.live, "live", "", "the live nodes, a JSON array of {namespace, cell_id}, or - for standard input (required)")
	opts.write.add(cmd)
	return cmd
}

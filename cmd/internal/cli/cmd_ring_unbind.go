package cli

import (
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringUnbindOptions struct {
	cell, live string
	write      ringWriteFlags
	store      ringStoreFlags
}

func newRingUnbindCmd(ios *IO) *cobra.Command {
	var opts ringUnbindOptions
	cmd := &cobra.Command{
		Use:   "unbind (FILE | --store etcd://HOST:PORT --namespace NS) --cell C --live NODES.json",
		Short: "Remove one cell binding, so the cell id can be claimed again",
		Long: `Unbind removes the binding of cell C, freeing its cell id for another
storage. It is refused while a live node names the cell or an epoch that
is not retired places it (ids still route there), and when the cell is not
bound. --live is the coordinator's roster, a JSON array of the live nodes,
[{"namespace": "orders", "cell_id": "cellA"}, ...] (other keys ignored;
a node without either key is an error), or - for standard input.

In a file the cell's fingerprint is dropped (its declaration with it when
no ring names the cell); in etcd its binding key is deleted, conditioned
on the key being as read. --expect-revision R, --dry-run and --json work as
for every write.` + ringBindingsHelp + ringStoreHelp,
		Example: `  fusee ring unbind orders.ring --cell cellOld --live nodes.json
  fusee ring unbind --store etcd://10.0.0.1:2379 --namespace orders --cell cellOld --live - --dry-run < nodes.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "cell", "live"); err != nil {
				return err
			}
			if err := ringCheckNames("--cell", opts.cell); err != nil {
				return err
			}
			live, err := ringReadLive(ios, opts.live)
			if err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error {
				var removed ringfile.Binding
				p, wrote, err := ringBindingWrite(cmd.Context(), st, &opts.write, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
					next, b, err := ringfile.Unbind(cur, opts.cell, live)
					removed = b
					return next, err
				})
				if err != nil {
					return err
				}
				return printRingBindingsChange(ios, &opts.write, p, wrote, ringfile.BindingsChange{Removed: []ringfile.Binding{removed}})
			})
		},
	}
	opts.store.add(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&opts.cell, "cell", "", "the cell id whose binding to remove (required)")
	f.StringVar(&opts.live, "live", "", "the live nodes, a JSON array of {namespace, cell_id}, or - for standard input (required)")
	opts.write.add(cmd)
	return cmd
}

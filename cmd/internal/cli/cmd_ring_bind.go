package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringBindOptions struct {
	cell, fingerprint string
	write             ringWriteFlags
	store             ringStoreFlags
}

func newRingBindCmd(ios *IO) *cobra.Command {
	var opts ringBindOptions
	cmd := &cobra.Command{
		Use:   "bind (FILE | --store etcd://HOST:PORT --namespace NS) --cell C --fingerprint FP",
		Short: "Claim a cell id for a storage fingerprint, as a registering node does",
		Long: `Bind claims cell id C of the namespace for the storage whose fingerprint is
FP, with the reference coordinator's answers:

  not bound yet          the binding is made (exit 0)
  bound to FP            a replica of the cell: nothing written (exit 0)
  bound to another FP    two databases would share one cell id: refused,
                         naming the bound fingerprint (exit 1)
  no --fingerprint       exempt (storage that cannot be shared, such as an
                         in-memory one): nothing written (exit 0)

A cell no ring places yet may be bound: nodes register before the epoch
that places their cell is opened. The claim is atomic: in a file under its
lock, in etcd a transaction conditioned on the binding key's absence, so of
two claimers with different fingerprints exactly one wins.

Preconditions: FILE is valid. --expect-revision R, --dry-run and --json
work as for every write.` + ringBindingsHelp + ringStoreHelp,
		Example: `  fusee ring bind orders.ring --cell cellC --fingerprint jdbc-77e1
  fusee ring bind --store etcd://10.0.0.1:2379 --namespace orders --cell cellC --fingerprint jdbc-77e1 --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "cell"); err != nil {
				return err
			}
			if err := ringCheckNames("--cell", opts.cell); err != nil {
				return err
			}
			if opts.fingerprint != "" {
				if err := ringfile.CheckFingerprint(opts.fingerprint); err != nil {
					return usagef("--fingerprint: %v", err)
				}
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingBind(cmd, ios, &opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&opts.cell, "cell", "", "the cell id to claim (required)")
	f.StringVar(&opts.fingerprint, "fingerprint", "", "the fingerprint of the cell's storage (none: exempt)")
	opts.write.add(cmd)
	return cmd
}

type ringBindView struct {
	File        string         `json:"file"`
	DryRun      bool           `json:"dry_run"`
	Revision    int64          `json:"revision"`
	Namespace   string         `json:"namespace"`
	Cell        string         `json:"cell_id"`
	Fingerprint string         `json:"fingerprint"`
	Outcome     ringfile.Claim `json:"outcome"`
}

func runRingBind(cmd *cobra.Command, ios *IO, opts *ringBindOptions, st ringfile.Store) error {
	var claim ringfile.Claim
	p, wrote, err := ringBindingWrite(cmd.Context(), st, &opts.write, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		next, c, err := ringfile.Bind(cur, opts.cell, opts.fingerprint)
		claim = c
		return next, err
	})
	if err != nil {
		return err
	}
	if opts.write.json {
		return ios.printJSON(ringBindView{File: p.File, DryRun: opts.write.dryRun, Revision: p.Revision,
			Namespace: p.Namespace, Cell: opts.cell, Fingerprint: opts.fingerprint, Outcome: claim})
	}
	ringDryRunNote(ios, &opts.write, p, wrote)
	switch {
	case claim == ringfile.ClaimExempt:
		_, err = fmt.Fprintf(ios.Out, "no fingerprint: cell %s of %s is exempt from the guard (storage that cannot be shared); nothing written\n", opts.cell, p.Namespace)
	case claim == ringfile.ClaimReplica:
		_, err = fmt.Fprintf(ios.Out, "cell %s of %s is bound to fingerprint %s already: a replica of that cell; nothing written (revision %d)\n", opts.cell, p.Namespace, opts.fingerprint, p.Revision)
	case opts.write.dryRun:
		_, err = fmt.Fprintf(ios.Out, "would bind cell %s of %s to fingerprint %s\n", opts.cell, p.Namespace, opts.fingerprint)
	default:
		_, err = fmt.Fprintf(ios.Out, "bound cell %s of %s to fingerprint %s in %s (revision %d)\n", opts.cell, p.Namespace, opts.fingerprint, p.File, p.Revision)
	}
	return err
}

package cli

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringExportOptions struct {
	output     string
	epochsOnly bool
	store      ringStoreFlags
}

func newRingExportCmd(ios *IO) *cobra.Command {
	var opts ringExportOptions
	cmd := &cobra.Command{
		Use:   "export (FILE | --store etcd://HOST:PORT --namespace NS) [-o POLICY.json] [--epochs-only]",
		Short: "Write a ring file as the reference coordinator's stored policy JSON",
		Long: `Export writes the policy in FILE as the reference coordinator stores it: by
default its etcd value, {"currentEpoch":N,"revision":N,"epochs":"..."} with
the epochs object as a JSON string; with --epochs-only the bare epochs
object its SQL stores keep in a column. The JSON is compact, keys in the
reference's order, epochs ascending, slots in ring order, "region":null
where a slot has none; cell fingerprints are not part of it.

Export of what "fusee ring import" read gives back the same bytes (for the
reference's own encoding). A namespace with no epoch exports currentEpoch 0,
the reference's value for "none".

Preconditions: FILE is valid. It writes to standard output, or atomically
to -o. Putting the value back into a running coordinator's store is a
compare-and-set there too: fence it on the key's version, or let
"fusee ring push" do it.` + ringStoreHelp,
		Example: `  fusee ring export orders.ring -o orders.json
  fusee ring export orders.ring --epochs-only`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.store.run(args, func(st ringfile.Store) error { return runRingExport(cmd.Context(), ios, opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().BoolVar(&opts.epochsOnly, "epochs-only", false, "write only the epochs object")
	return cmd
}

func runRingExport(ctx context.Context, ios *IO, opts ringExportOptions, st ringfile.Store) error {
	p, err := ringLoad(ctx, st)
	if err != nil {
		return err
	}
	data := ringfile.ExportWiggle(p, opts.epochsOnly)
	if opts.output != "" {
		return ringfile.WriteFile(opts.output, data)
	}
	_, err = ios.Out.Write(data)
	return err
}

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringInitOptions struct {
	namespace    string
	shards       int
	cells        []string
	fingerprints map[string]string
	write        ringWriteFlags
	store        ringStoreFlags
}

func newRingInitCmd(ios *IO) *cobra.Command {
	var opts ringInitOptions
	cmd := &cobra.Command{
		Use:   "init (FILE | --store etcd://HOST:PORT) --namespace NS --shards S --cells A,B,...",
		Short: "Create a ring file with a genesis epoch spread evenly over cells",
		Long: `Init creates FILE holding a new policy for one namespace: the cells
declared, and epoch 0 OPEN with an even ring over shards 0..S-1 (S from 1
to 1024; choose generously, a cell needs at least one shard): the cells
take contiguous ranges in the order given, the first S mod N cells one
shard more. The revision is 1. Later epochs may add and remove shards
("fusee ring plan --add-shards", "fusee ring open-epoch --add-shards").

Preconditions: FILE must not exist: init never overwrites a ring file, and
the only revision it can expect is 0, no file (any other exits 5). The
namespace and cell ids are 1 to 64 letters, digits, '-' or '_'.

--fingerprint CELL=FP records a cell's storage fingerprint, its binding:
a later claim of the cell id with another fingerprint is refused (it would
conflate two databases into one cell). In etcd the key must not exist (the
transaction is conditioned on its absence), and each fingerprint is
claimed in the same transaction as a binding key; bindings that nodes made
before the policy existed are kept, and one that disagrees is refused.` + ringStoreHelp,
		Example: `  fusee ring init orders.ring --namespace orders --shards 1024 --cells cellA
  fusee ring init orders.ring --namespace orders --shards 1024 --cells a,b,c --fingerprint a=jdbc-5f1c0e
  fusee ring init orders.ring --namespace orders --shards 8 --cells a,b --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "namespace", "shards", "cells"); err != nil {
				return err
			}
			if err := ringCheckNames("--namespace", opts.namespace); err != nil {
				return err
			}
			if err := ringCheckNames("--cells", opts.cells...); err != nil {
				return err
			}
			if err := ringCheckFingerprints(opts.fingerprints); err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingInit(cmd.Context(), ios, &opts, st) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.namespace, "namespace", "", "the namespace the ring places (required)")
	f.IntVar(&opts.shards, "shards", 0, "the genesis ring's shards 0..S-1, S from 1 to 1024 (required)")
	f.StringSliceVar(&opts.cells, "cells", nil, "the cells of the genesis ring, in order (required)")
	f.StringToStringVar(&opts.fingerprints, "fingerprint", nil, "a cell's storage fingerprint, CELL=FP (repeatable)")
	opts.write.add(cmd)
	opts.store.add(cmd, &opts.namespace)
	markCLIOnly(cmd, "shards")
	return cmd
}

func runRingInit(ctx context.Context, ios *IO, opts *ringInitOptions, st ringfile.Store) error {
	path := st.Name()
	if opts.shards < 1 || opts.shards > ringfile.MaxShards {
		return usagef("--shards %d: want 1 to %d", opts.shards, ringfile.MaxShards)
	}
	if len(opts.cells) > opts.shards {
		return usagef("%d cells but only %d shards: a cell needs at least one shard", len(opts.cells), opts.shards)
	}
	empty := &ringfile.Policy{File: path, Namespace: opts.namespace, Current: ringfile.NoEpoch}
	p, err := ringfile.OpenEpoch(empty, ringfile.EvenRing(opts.shards, opts.cells), ringfile.ShardChange{}, ringFingerprints(opts.fingerprints)...)
	if err != nil {
		return err
	}
	p.File = path
	if err := st.Create(ctx, p, opts.write.options()); err != nil {
		return err
	}
	return opts.write.reportWrite(ios, st, p, fmt.Sprintf("created %s: namespace %s, %d shards, epoch 0 open on %d cell%s (revision %d)",
		path, p.Namespace, opts.shards, len(opts.cells), ringPlural(len(opts.cells)), p.Revision))
}

func ringPlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

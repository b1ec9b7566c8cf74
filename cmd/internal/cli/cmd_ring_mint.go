package cli

import (
	"bufio"
	"crypto/rand"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/idcodec"
	"github.com/fusee-dev/fusee/ringfile"
)

type ringMintOptions struct {
	cell  string
	count int
	json  bool
	store ringStoreFlags
}

func newRingMintCmd(ios *IO) *cobra.Command {
	var opts ringMintOptions
	cmd := &cobra.Command{
		Use:   "mint (FILE | --store etcd://HOST:PORT --namespace NS) --cell C [--count K]",
		Short: "Mint ids as a cell would now, from the ring file's current epoch",
		Long: `Mint makes the ids cell C would mint now: stamped with the current epoch
and one of the shards C owns in the current ring, chosen as
owned[shardFor(ulid, len(owned))] with the shards in the order their slots
appear in the ring, and labelled with C. Each resolves to C.

Preconditions: FILE is valid and has a current epoch. A cell that owns no
shard in the current ring is on standby: it mints nothing and this refuses
(exit 1). It writes nothing. Prints one id per line, or with --json one
object per line (the fields of "fusee id parse --json").` + ringStoreHelp,
		Example: `  fusee ring mint orders.ring --cell cellB
  fusee ring mint orders.ring --cell cellB --count 100 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "cell"); err != nil {
				return err
			}
			if err := ringCheckNames("--cell", opts.cell); err != nil {
				return err
			}
			if opts.count < 1 {
				return usagef("--count must be at least 1, not %d", opts.count)
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingMint(cmd, ios, opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().StringVar(&opts.cell, "cell", "", "the minting cell (required)")
	cmd.Flags().IntVar(&opts.count, "count", 1, "how many ids to mint")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per id")
	return cmd
}

func runRingMint(cmd *cobra.Command, ios *IO, opts ringMintOptions, st ringfile.Store) error {
	p, err := ringLoad(cmd.Context(), st)
	if err != nil {
		return err
	}
	pl, err := p.Placement(opts.cell)
	if err != nil {
		return err
	}
	m := idcodec.NewMinter(pl, rand.Reader, nil)
	w := bufio.NewWriter(ios.Out)
	defer w.Flush()
	out := &IO{Out: w}
	for i := range opts.count {
		if ctx := cmd.Context(); i%1024 == 0 && ctx != nil {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		id, err := m.Mint()
		if err != nil {
			return err
		}
		if opts.json {
			err = out.printJSONLine(newIDView(id))
		} else {
			_, err = w.WriteString(id + "\n")
		}
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

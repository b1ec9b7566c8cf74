package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

// Cell bindings (seed 000 §9): the commands that list, claim, remove and
// prune them. A binding is a cell's declared fingerprint (on etcd, a key
// of its own beside the policy's), so each write is an ordinary policy
// write: under the lock or fenced on the keys, a new revision, the
// expected revision honoured, --dry-run writing nothing.

const ringBindingsHelp = `

A cell binding ties a cell id of the namespace to the fingerprint of the
cell's storage, so that two groups of nodes on two databases cannot share
one cell id. In a ring file the binding is the cell's declared
fingerprint ("cell C fingerprint=F"); in etcd it is the key
/wiggle/coord/cellbinding/NS/C holding the fingerprint (docs/rings.md,
"Cell bindings").`

type ringBindingsOptions struct {
	json  bool
	store ringStoreFlags
}

func newRingBindingsCmd(ios *IO) *cobra.Command {
	var opts ringBindingsOptions
	cmd := &cobra.Command{
		Use:   "bindings (FILE | --store etcd://HOST:PORT --namespace NS)",
		Short: "List the cell bindings: each cell id's storage fingerprint",
		Long: `Bindings lists the namespace's cell bindings, by cell id: the namespace,
the cell id and the fingerprint of the storage that claimed it. A cell
declared without a fingerprint is not bound.

Preconditions: FILE is valid. --json prints {"file", "revision",
"bindings": [{"namespace", "cell_id", "fingerprint"}]}.` + ringBindingsHelp + ringStoreHelp,
		Example: `  fusee ring bindings orders.ring
  fusee ring bindings --store etcd://10.0.0.1:2379 --namespace orders --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.store.run(args, func(st ringfile.Store) error {
				p, err := ringLoad(cmd.Context(), st)
				if err != nil {
					return err
				}
				bs := ringNonNil(p.Bindings())
				if opts.json {
					return ios.printJSON(struct {
						File     string             `json:"file"`
						Revision int64              `json:"revision"`
						Bindings []ringfile.Binding `json:"bindings"`
					}{st.Name(), p.Revision, bs})
				}
				if len(bs) == 0 {
					_, err := fmt.Fprintf(ios.Out, "%s: no cell bindings\n", st.Name())
					return err
				}
				rows := make([][]string, len(bs))
				for i, b := range bs {
					rows[i] = []string{b.Namespace, b.Cell, b.Fingerprint}
				}
				return ios.printTable([]string{"NAMESPACE", "CELL", "FINGERPRINT"}, rows)
			})
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print as JSON")
	return cmd
}

// errRingNothing marks a binding write that has nothing to write.
var errRingNothing = errors.New("nothing to write")

// ringBindingWrite runs change, which returns nil for "nothing to write",
// as one write of st. It returns the policy written (or that would be,
// with --dry-run), or the current one and wrote false.
func ringBindingWrite(ctx context.Context, st ringfile.Store, w *ringWriteFlags, change func(cur *ringfile.Policy) (*ringfile.Policy, error)) (p *ringfile.Policy, wrote bool, err error) {
	var cur *ringfile.Policy
	next, err := st.Update(ctx, w.options(), func(c *ringfile.Policy) (*ringfile.Policy, error) {
		cur = c
		next, err := change(c)
		if err == nil && next == nil {
			err = errRingNothing
		}
		return next, err
	})
	switch {
	case errors.Is(err, errRingNothing):
		return cur, false, nil
	case err != nil:
		return nil, false, ringExplainInvalidIn(st, err)
	}
	return next, true, nil
}

// ringDryRunNote says on stderr that a dry run wrote nothing.
func ringDryRunNote(ios *IO, w *ringWriteFlags, p *ringfile.Policy, wrote bool) {
	if w.dryRun && wrote {
		fmt.Fprintf(ios.Err, "dry run: %s would be at revision %d; nothing written\n", p.File, p.Revision)
	}
}

// ringReadLive reads the live nodes from path, or standard input for "-".
func ringReadLive(ios *IO, path string) ([]ringfile.LiveNode, error) {
	var data []byte
	var err error
	name := path
	if path == "-" {
		data, err = io.ReadAll(ios.In)
		name = "standard input"
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the live nodes: %w", err)
	}
	return ringfile.ParseLiveNodes(name, data)
}

// ringBindingsChangeView is what unbind and prune-bindings report in JSON.
type ringBindingsChangeView struct {
	File     string                 `json:"file"`
	DryRun   bool                   `json:"dry_run"`
	Revision int64                  `json:"revision"`
	Removed  []ringfile.Binding     `json:"removed"`
	Kept     []ringfile.KeptBinding `json:"kept"`
}

// printRingBindingsChange prints what unbind or prune-bindings removed and
// kept, one line each, then a summary.
func printRingBindingsChange(ios *IO, w *ringWriteFlags, p *ringfile.Policy, wrote bool, ch ringfile.BindingsChange) error {
	if w.json {
		return ios.printJSON(ringBindingsChangeView{File: p.File, DryRun: w.dryRun, Revision: p.Revision,
			Removed: ringNonNil(ch.Removed), Kept: ringNonNil(ch.Kept)})
	}
	ringDryRunNote(ios, w, p, wrote)
	verb := "removed"
	if w.dryRun {
		verb = "would remove"
	}
	for _, b := range ch.Removed {
		fmt.Fprintf(ios.Out, "%s: cell %s of %s (fingerprint %s)\n", verb, b.Cell, b.Namespace, b.Fingerprint)
	}
	for _, k := range ch.Kept {
		verb := "place"
		if len(k.Epochs) == 1 {
			verb = "places"
		}
		fmt.Fprintf(ios.Out, "kept: cell %s of %s (fingerprint %s): %s, not retired, %s it\n",
			k.Cell, k.Namespace, k.Fingerprint, ringfile.EpochList(k.Epochs), verb)
	}
	if !wrote {
		_, err := fmt.Fprintf(ios.Out, "%s: no binding to remove; nothing written (revision %d)\n", p.File, p.Revision)
		return err
	}
	_, err := fmt.Fprintf(ios.Out, "%s %d binding%s in %s (revision %d)\n", verb, len(ch.Removed), ringPlural(len(ch.Removed)), p.File, p.Revision)
	return err
}

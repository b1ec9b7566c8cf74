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

type ringImportOptions struct {
	from, namespace, cellsFrom string
	write                      ringWriteFlags
	store                      ringStoreFlags
}

func newRingImportCmd(ios *IO) *cobra.Command {
	var opts ringImportOptions
	cmd := &cobra.Command{
		Use:   "import (FILE | --store etcd://HOST:PORT) --from POLICY.json --namespace NS [--cells-from RING]",
		Short: "Make a ring file from the reference coordinator's stored policy JSON",
		Long: `Import reads a namespace's policy as the reference coordinator stores it
and writes it as a ring file. It accepts the etcd value (the key
/wiggle/coord/policy/<namespace>), where "epochs" is a JSON string:

  {"currentEpoch":1,"revision":3,"epochs":"{\"0\":{\"status\":\"DRAINING\",\"ring\":[...]}}"}

the same with "epochs" as a plain object, and the bare epochs object the
SQL stores keep in a column (it carries no revision: it imports at 0, with
the OPEN epoch as current). Unknown keys, duplicate keys and non-integer
numbers are errors. --from - reads standard input.

The JSON does not hold the namespace (it is in the key): give it. Each
epoch's shard set is the shards its ring names, as the reference has it.
Cells are declared from the rings, without fingerprints; --cells-from RING
carries the declarations (fingerprints, which are the cells' bindings) of
another ring file over.

The imported policy is validated before anything is written: the
reference checks nothing, so a shard placed twice is listed with every other finding and the exit code is 1. If FILE does not
exist it is created; if it exists, the import must move it forward (a newer
revision, every epoch and ring of FILE kept, no status going back) or it
is refused. --expect-revision and --dry-run work as for every write.` + ringStoreHelp,
		Example: `  etcdctl get --print-value-only /wiggle/coord/policy/orders > orders.json
  fusee ring import orders.ring --from orders.json --namespace orders
  fusee ring import orders.ring --from orders.json --namespace orders --cells-from old.ring --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "from", "namespace"); err != nil {
				return err
			}
			if err := ringCheckNames("--namespace", opts.namespace); err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingImport(cmd.Context(), ios, &opts, st) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.from, "from", "", "the stored policy JSON to read, or - for standard input (required)")
	f.StringVar(&opts.namespace, "namespace", "", "the namespace the policy is for (required)")
	f.StringVar(&opts.cellsFrom, "cells-from", "", "carry the cell declarations (fingerprints) of this ring file over")
	opts.write.add(cmd)
	opts.store.add(cmd, &opts.namespace)
	return cmd
}

func runRingImport(ctx context.Context, ios *IO, opts *ringImportOptions, st ringfile.Store) error {
	p, err := opts.read(ios)
	if err != nil {
		return err
	}
	p.File = opts.from // findings name the input
	if findings := ringfile.Validate(p); ringfile.HasErrors(findings) {
		printRingFindings(ios, opts.from, findings)
		return exitSilently(ExitFailure, "the imported policy has errors; nothing written")
	}
	return ringPut(ctx, ios, st, p, &opts.write, ringPutHow{verb: "imported", from: opts.from})
}

// ringPutHow says how ringPut reports and merges.
type ringPutHow struct {
	verb, from string
	// keepCells keeps st's cell declarations, and so its cell bindings, in
	// what is written; a cell bound to two fingerprints, one on each side,
	// is refused naming both.
	keepCells bool
}

// ringPut writes a valid policy into st as import does: st is created if
// it holds no policy; otherwise the write must move st's policy forward (a
// newer revision, every epoch and ring kept, no status going back), which
// the store's Update checks like any write. Used by import, push and pull.
func ringPut(ctx context.Context, ios *IO, st ringfile.Store, p *ringfile.Policy, w *ringWriteFlags, how ringPutHow) error {
	name := st.Name()
	exists, err := ringExists(ctx, st)
	if err != nil {
		return err
	}
	if !exists {
		p = p.Clone()
		p.File = name
		if err := st.Create(ctx, p, w.options()); err != nil {
			return ringExplainInvalidIn(st, err)
		}
		return w.reportWrite(ios, st, p, fmt.Sprintf("%s %s into %s: %d epochs, current %d, revision %d", how.verb, how.from, name, len(p.Epochs), p.Current, p.Revision))
	}
	upToDate := errors.New("up to date")
	next, err := st.Update(ctx, w.options(), func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		q := p.Clone()
		if how.keepCells {
			for _, b := range cur.Bindings() {
				if fp := q.Bound(b.Cell); fp != "" && fp != b.Fingerprint {
					return nil, &ringfile.BindingConflictError{Name: name, Namespace: b.Namespace, Cell: b.Cell, Bound: b.Fingerprint, Claimed: fp}
				}
			}
			for _, c := range cur.Cells {
				q.Declare(c)
			}
		}
		if ringSameStored(st, cur, q) {
			return nil, upToDate
		}
		// Only bindings differ (a node registered in etcd, which does not
		// bump the policy's revision): carrying them over is a write of
		// its own, at the next revision.
		if how.keepCells && q.Revision == cur.Revision && string(ringfile.ExportWiggle(q, false)) == string(ringfile.ExportWiggle(cur, false)) {
			q.Revision++
		}
		return q, nil
	})
	if errors.Is(err, upToDate) {
		_, err = fmt.Fprintf(ios.Out, "%s already holds this policy (revision %d); nothing written\n", name, p.Revision)
		return err
	}
	if err != nil {
		return ringExplainInvalidIn(st, err)
	}
	return w.reportWrite(ios, st, next, fmt.Sprintf("%s %s into %s: now revision %d, current epoch %d", how.verb, how.from, name, next.Revision, next.Current))
}

// read parses the JSON and the declarations to carry over.
func (o *ringImportOptions) read(ios *IO) (*ringfile.Policy, error) {
	var data []byte
	var err error
	if o.from == "-" {
		data, err = io.ReadAll(ios.In)
	} else {
		data, err = os.ReadFile(o.from)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.from, err)
	}
	opt := ringfile.ImportOptions{File: o.from, Namespace: o.namespace}
	if o.cellsFrom != "" {
		from, err := ringfile.Load(o.cellsFrom)
		if err != nil {
			return nil, err
		}
		opt.Cells = from.Cells
	}
	return ringfile.ImportWiggle(data, opt)
}

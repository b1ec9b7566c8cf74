package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
	"github.com/fusee-dev/fusee/ringfile/etcdstore"
)

func init() {
	addCommand(newRingCmd)
	registerCodeMapper(func(err error) (int, bool) {
		switch {
		case errors.Is(err, ringfile.ErrConflict):
			return ExitConflict, true
		case errors.Is(err, ringfile.ErrLocked):
			return ExitInUse, true
		}
		return 0, false
	})
}

func newRingCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ring",
		Short: "Hold, check, plan and open the rings that place a namespace on cells",
		Long: `A ring file holds one namespace's placement policy: its epochs (each OPEN,
DRAINING or RETIRED), each epoch's ring, which places each shard of the
epoch's own shard set on one cell, and the cells with their bindings
(storage fingerprints). An id carries its epoch and shard, so its
cell is a lookup in its own epoch's ring and never changes.

A published ring is sealed: the only way to change placement is
"fusee ring open-epoch", which opens a new epoch and turns the previous one
DRAINING with its ring kept. Every write re-reads the file under a lock on
FILE itself (it leaves no other file) and is a compare-and-set on the file's
revision: --expect-revision R refuses to write (exit 5) if the file has
moved on. A write that finds another one running says who holds the lock
and waits up to --lock-timeout (5s), then exits 3. Writes are atomic and
synced; --dry-run takes no lock and writes nothing. Commands other than validate and show refuse a file that has
errors (exit 1): run "fusee ring validate FILE" to see them all.

Every command but push and pull also works on the policy the reference
coordinator keeps in etcd: give --store etcd://HOST:PORT[,...] --namespace
NS instead of FILE; "fusee ring push" and "fusee ring pull" move a policy
between a file and etcd.

The format, the planner's rule and a worked split are in docs/rings.md.`,
		Example: `  fusee ring init orders.ring --namespace orders --shards 1024 --cells cellA
  fusee ring plan orders.ring --split cellA:cellB -o split.plan
  fusee ring open-epoch orders.ring --plan split.plan
  fusee ring resolve orders.ring orders.e1.s700.01H8XK9ABCDEFGHJKMNPQRSTVW`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newRingInitCmd(ios), newRingShowCmd(ios), newRingValidateCmd(ios),
		newRingPlanCmd(ios), newRingOpenEpochCmd(ios), newRingRetireCmd(ios),
		newRingResolveCmd(ios), newRingActiveCellsCmd(ios), newRingMintCmd(ios),
		newRingImportCmd(ios), newRingExportCmd(ios),
		newRingPushCmd(ios), newRingPullCmd(ios),
		newRingBindingsCmd(ios), newRingBindCmd(ios), newRingUnbindCmd(ios), newRingPruneBindingsCmd(ios),
	)
	return cmd
}

// ringWriteFlags are the flags every command that writes a ring file has.
type ringWriteFlags struct {
	dryRun      bool
	expect      int64
	json        bool
	lockTimeout time.Duration
	cmd         *cobra.Command
}

func (w *ringWriteFlags) add(cmd *cobra.Command) {
	w.cmd = cmd
	f := cmd.Flags()
	f.BoolVar(&w.dryRun, "dry-run", false, "print the file that would be written and write nothing")
	f.Int64Var(&w.expect, "expect-revision", 0, "refuse to write (exit 5) unless the file is at this revision")
	f.BoolVar(&w.json, "json", false, "print the result as JSON")
	f.DurationVar(&w.lockTimeout, "lock-timeout", 5*time.Second, "how long to wait for another write of FILE before giving up (exit 3); not used with --store, where a write is fenced on the key's version")
	markCLIOnly(cmd, "expect-revision")
}

// options turns the flags into the store's write options.
func (w *ringWriteFlags) options() ringfile.WriteOptions {
	opt := ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision, DryRun: w.dryRun, LockWait: max(w.lockTimeout, time.Millisecond),
		OnWait: func(holder string) {
			fmt.Fprintf(w.cmd.ErrOrStderr(), "waiting for %s: locked by %s; giving up after %s (--lock-timeout)\n",
				w.cmd.Flags().Arg(0), holder, w.lockTimeout)
		}}
	if w.cmd.Flags().Changed("expect-revision") {
		opt.ExpectRevision, opt.ExpectedBy = w.expect, "--expect-revision"
	}
	return opt
}

// ringWritten is what a write reports in JSON.
type ringWritten struct {
	File         string   `json:"file"`
	DryRun       bool     `json:"dry_run"`
	Revision     int64    `json:"revision"`
	CurrentEpoch *int64   `json:"current_epoch"` // null: no epoch yet
	Draining     []int64  `json:"draining"`
	ActiveCells  []string `json:"active_cells"`
}

// reportWrite prints the outcome of a write: with --dry-run the file that
// would have been written, with --json a summary object, else summary.
// A dry run into etcd prints the value it would write there.
func (w *ringWriteFlags) reportWrite(ios *IO, st ringfile.Store, p *ringfile.Policy, summary string) error {
	if w.json {
		v := ringWritten{File: p.File, DryRun: w.dryRun, Revision: p.Revision,
			Draining: ringNonNil(p.Draining()), ActiveCells: ringNonNil(p.ActiveCells())}
		if p.Current != ringfile.NoEpoch {
			v.CurrentEpoch = &p.Current
		}
		return ios.printJSON(v)
	}
	if w.dryRun {
		fmt.Fprintf(ios.Err, "dry run: %s would be at revision %d; nothing written\n", p.File, p.Revision)
		text := ringfile.Format(p)
		if _, ok := st.(*etcdstore.Store); ok {
			text = append(etcdstore.Encode(p), '\n')
		}
		_, err := ios.Out.Write(text)
		return err
	}
	_, err := fmt.Fprintln(ios.Out, summary)
	return err
}

func ringNonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// loadRing loads a ring file that must be valid to act on.
func loadRing(ctx context.Context, path string) (*ringfile.Policy, error) {
	p, err := ringfile.LoadValidContext(ctx, path)
	return p, ringExplainInvalid(path, err)
}

// ringExplainInvalid points an invalid-policy error at validate.
func ringExplainInvalid(path string, err error) error {
	if errors.Is(err, ringfile.ErrInvalid) {
		return fmt.Errorf("%w\nrun `fusee ring validate %s` to see every finding", err, path)
	}
	return err
}

// ringParseSlots reads slots written as the reference's CLI writes them,
// shard=cellId[@region], extended with ranges: "0-127=a,128-255=b@eu".
func ringParseSlots(items []string) (ringfile.Ring, error) {
	var ring ringfile.Ring
	for _, item := range items {
		shards, cell, ok := strings.Cut(item, "=")
		if !ok {
			return nil, usagef("slot %q: want SHARD=CELL[@REGION] or FIRST-LAST=CELL[@REGION]", item)
		}
		slots, err := ringfile.ParseSlot(shards, cell)
		if err != nil {
			return nil, usagef("--slots: %v", err)
		}
		ring = append(ring, slots...)
	}
	return ring, nil
}

// ringCheckNames refuses a bad namespace, cell id or region given with
// flag as a usage error (exit 2), before anything is read or written.
func ringCheckNames(flag string, names ...string) error {
	for _, n := range names {
		if err := ringfile.CheckName(flag, n); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// ringCheckFingerprints refuses --fingerprint CELL=FP pairs whose cell id
// or fingerprint is bad, as a usage error.
func ringCheckFingerprints(m map[string]string) error {
	for _, cell := range slices.Sorted(maps.Keys(m)) {
		if err := ringCheckNames("--fingerprint", cell); err != nil {
			return err
		}
		if err := ringfile.CheckFingerprint(m[cell]); err != nil {
			return usagef("--fingerprint %s=%s: %v", cell, m[cell], err)
		}
	}
	return nil
}

// ringFingerprints turns --fingerprint cell=FP pairs into declarations.
func ringFingerprints(m map[string]string) []ringfile.CellDecl {
	var out []ringfile.CellDecl
	for _, cell := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ringfile.CellDecl{ID: cell, Fingerprint: m[cell]})
	}
	return out
}

func ringJoinEpochs(xs []int64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ", ")
}

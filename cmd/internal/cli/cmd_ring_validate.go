package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringValidateOptions struct {
	json  bool
	store ringStoreFlags
}

func newRingValidateCmd(ios *IO) *cobra.Command {
	var opts ringValidateOptions
	cmd := &cobra.Command{
		Use:   "validate (FILE | --store etcd://HOST:PORT --namespace NS)",
		Short: "Check a ring file against every rule and list all findings",
		Long: `Validate reads FILE and reports every problem at once, each with its line:

  syntax     unknown keys, duplicate fields or epochs, malformed values
  epochs     exactly one epoch is open and it is the current one; none is
             newer than the current one
  rings      every shard of each epoch's own shard set (its shards= in
             the file) is placed on exactly one cell of its ring: a shard
             missing (its ids would resolve nowhere), a shard placed twice
             (ambiguous), a shard outside the set or beyond 0..1023
  cells      every cell a ring names is declared; one cell id declared with
             two different fingerprints (two databases conflated)
  standby    a declared cell with no shard in the current ring mints
             nothing (a warning)

It exits 0 when there is no error (warnings are printed), 1 when there is
any, after listing them all. It only reads FILE. --json prints
{"file", "valid", "findings": [{"severity", "file", "line", "message"}]}.` + ringStoreHelp,
		Example: `  fusee ring validate orders.ring
  fusee ring validate orders.ring --json
  fusee ring validate --store etcd://10.0.0.1:2379 --namespace orders`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.store.run(args, func(st ringfile.Store) error { return runRingValidate(cmd.Context(), ios, opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the findings as JSON")
	return cmd
}

func runRingValidate(ctx context.Context, ios *IO, opts ringValidateOptions, st ringfile.Store) error {
	path := st.Name()
	findings, err := ringFindings(ctx, st)
	if err != nil {
		return err
	}
	valid := !ringfile.HasErrors(findings)
	if opts.json {
		if err := ios.printJSON(struct {
			File     string             `json:"file"`
			Valid    bool               `json:"valid"`
			Findings []ringfile.Finding `json:"findings"`
		}{path, valid, ringNonNil(findings)}); err != nil {
			return err
		}
	} else {
		printRingFindings(ios, path, findings)
	}
	if !valid {
		return exitSilently(ExitFailure, "findings")
	}
	return nil
}

// ringFindings loads path and returns every finding: its syntax errors,
// if any, then what Validate reports of what could be read.
func ringFindings(ctx context.Context, st ringfile.Store) ([]ringfile.Finding, error) {
	p, err := st.Load(ctx)
	if err == nil {
		return ringfile.Validate(p), nil
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return nil, err // not a syntax error: unreadable
	}
	var out []ringfile.Finding
	for _, e := range joined.Unwrap() {
		var se *ringfile.SyntaxError
		if !errors.As(e, &se) {
			return nil, err
		}
		out = append(out, ringfile.Finding{Severity: ringfile.SeverityError, File: se.File, Line: se.Line, Msg: se.Msg})
	}
	if p != nil {
		// What the refused lines would decide is skipped; the rest is checked.
		out = append(out, ringfile.Validate(p)...)
	}
	return out, nil
}

func printRingFindings(ios *IO, path string, findings []ringfile.Finding) {
	errs := 0
	for _, f := range findings {
		style := styleWarn
		if f.Severity == ringfile.SeverityError {
			style, errs = styleBad, errs+1
		}
		fmt.Fprintln(ios.Out, style.Render(f.String()))
	}
	warns := len(findings) - errs
	switch {
	case errs > 0:
		fmt.Fprintf(ios.Out, "%s: %d error%s, %d warning%s\n", path, errs, ringPlural(errs), warns, ringPlural(warns))
	case warns > 0:
		fmt.Fprintf(ios.Out, "%s: valid, %d warning%s\n", path, warns, ringPlural(warns))
	default:
		fmt.Fprintf(ios.Out, "%s: valid\n", path)
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs fusee with args and returns the process exit code.
func Main(version string, args []string, in io.Reader, out, errw io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, version, args, in, out, errw, os.Environ())
}

// Run is Main with the context and environment supplied, for tests.
func Run(ctx context.Context, version string, args []string, in io.Reader, out, errw io.Writer, env []string) int {
	ios := newIO(in, out, errw, env)
	root := NewRoot(ios, resolveVersion(version), env)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports a mistyped command as a plain error; it is a usage error.
		err = usageError{err}
	}
	code := exitCode(err)
	if code == ExitCancelled {
		err = interruptedMessage(cmd, err)
	}
	var ee exitError
	if !(errors.As(err, &ee) && ee.silent) {
		fmt.Fprintln(ios.Err, styleBad.Render("fusee: ")+err.Error())
		if code == ExitUsage {
			fmt.Fprintln(ios.Err, styleDim.Render("Run 'fusee --help' or add --help to the command for usage."))
		}
	}
	return code
}

func resolveVersion(v string) string {
	if v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// NewRoot builds the command tree.
func NewRoot(ios *IO, version string, env []string) *cobra.Command {
	cfg := &config{env: env}
	root := &cobra.Command{
		Use:   "fusee",
		Short: "Operator tool for a durable-workflow engine's data",
		Long: `fusee works on the data of a durable-workflow engine: it changes the shard
count of a closed data directory (reshard), inspects and verifies one, and
holds the rings that place a namespace's instances on cells.

Settings come from, highest first: command-line flags, FUSEE_* environment
variables (FUSEE_JSON=1: the flag name in capitals with '-' as '_'), the
file named by --config (or $FUSEE_CONFIG), then defaults. Only preferences
and budgets come from the environment or a file (--json, --memory,
--scratch, --lock-timeout, and the ring commands' etcd connection: --store,
--cacert, --cert, --key, --user, --password, --dial-timeout,
--command-timeout); a command's targets and choices (shard counts,
output files, --force) come from the command line alone.

Exit codes: 0 ok, 1 failure or findings, 2 usage, 3 directory in use,
4 interrupted reshard must be finished, 5 lost a compare-and-set (re-read
and retry), 130 interrupted.`,
		Example: `  fusee demo                                  # the main job on a built-in example
  fusee gen /tmp/data --shards 4 --runs 2000 --seed 1
  fusee verify /tmp/data && fusee inspect /tmp/data
  fusee ring show orders.ring --json
  FUSEE_JSON=1 fusee inspect /tmp/data        # settings from the environment`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return cfg.apply(cmd)
		},
	}
	root.SetVersionTemplate("fusee {{.Version}}\n")
	root.PersistentFlags().StringVar(&cfg.file, "config", "", "read settings from this file (YAML, TOML or JSON)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true

	for _, add := range commands {
		root.AddCommand(add(ios))
	}
	return root
}

// commands lists the constructors of the top-level commands; each command
// file adds its own in an init function.
var commands []func(*IO) *cobra.Command

func addCommand(f func(*IO) *cobra.Command) { commands = append(commands, f) }

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// rangeArgs is cobra.RangeArgs with a usage exit code.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.RangeArgs(lo, hi)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

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
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs fusee with args and returns the process exit code.
//
// A closed standard output (fusee demo | head -2) stops the command as
// Ctrl-C does, so that it cleans up what it would on an interrupt, and the
// process exits 141 (as if killed by SIGPIPE) without printing the
// interrupted line of a command that changes nothing. Without this the Go
// runtime kills the process on its first write to the closed pipe, before
// any deferred cleanup runs.
func Main(version string, args []string, in io.Reader, out, errw io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE) // writes to a closed pipe now fail with EPIPE instead
	defer signal.Stop(pipe)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if f, ok := out.(*os.File); ok {
		out = &pipeWatcher{f: f, closed: func() { cancel(errOutputClosed) }}
	}
	return Run(ctx, version, args, in, out, errw, os.Environ())
}

// outputClosed ends a command whose standard output was closed under it:
// exit 141, and on standard error what the interrupted command left, except
// for a command that changes nothing (a reader that stopped early is not
// news).
func outputClosed(ios *IO, cmd *cobra.Command, err error) int {
	if err == nil {
		return ExitOutputClosed
	}
	var ce *changedError
	if errors.As(err, &ce) {
		// The directory changed for good before the output was cut: say
		// so, and where the report is kept, not that it was interrupted.
		fmt.Fprintln(ios.Err, styleBad.Render("fusee: ")+"standard output was closed, but "+ce.Error())
		return ExitOutputClosed
	}
	if !errors.Is(err, context.Canceled) {
		err = context.Canceled // the failed write, or a step that stopped on it
	}
	msg := interruptedMessage(cmd, err).Error()
	if !strings.HasSuffix(msg, ": "+nothingChanged) && !strings.Contains(msg, ": "+nothingChanged+";") {
		fmt.Fprintln(ios.Err, styleBad.Render("fusee: ")+"standard output was closed; "+msg)
	}
	return ExitOutputClosed
}

// errOutputClosed is the cancellation cause when standard output is a
// pipe whose reader has gone.
var errOutputClosed = errors.New("standard output was closed")

// ExitOutputClosed is the exit code when standard output was closed:
// 128+SIGPIPE, what a shell shows for a process killed by it.
const ExitOutputClosed = 128 + int(syscall.SIGPIPE)

// pipeWatcher is standard output that cancels the command when a write
// finds the pipe closed. Fd is the file's, for the terminal checks (see
// isTerminal). The file is not embedded: its WriteString would bypass Write.
type pipeWatcher struct {
	f      *os.File
	closed func()
}

func (p *pipeWatcher) Fd() uintptr { return p.f.Fd() }

func (p *pipeWatcher) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.closed()
	}
	return n, err
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
	// A command ends its progress display itself; this is the net under
	// every way out (an error, Ctrl-C, a closed stdout): no bar is left on
	// the line the error message is about to take.
	ios.active.end()
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports a mistyped command as a plain error; it is a usage error.
		err = usageError{err}
	}
	if errors.Is(context.Cause(ctx), errOutputClosed) {
		return outputClosed(ios, cmd, err)
	}
	code := exitCode(err)
	if code == ExitCancelled {
		err = interruptedMessage(cmd, err)
	}
	var ee exitError
	if !(errors.As(err, &ee) && ee.silent) {
		fmt.Fprintln(ios.Err, styleBad.Render("fusee: ")+cutLongTokens(err.Error()))
		if code == ExitUsage {
			fmt.Fprintln(ios.Err, styleDim.Render(helpPointer(cmd)))
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
and budgets come from the environment or a file (--json, --progress,
--memory, --scratch, --lock-timeout, and the ring commands' etcd
connection: --store, --cacert, --cert, --key, --user, --password,
--dial-timeout, --command-timeout); a command's targets and choices
(shard counts, output files, --force) come from the command line alone.

Exit codes: 0 ok, 1 failure or findings, 2 usage, 3 directory in use,
4 interrupted reshard must be finished, 5 lost a compare-and-set (re-read
and retry), 130 interrupted, 141 standard output closed.

JSON output (--json) uses snake_case names; docs/schema holds a JSON
schema for each command's output. Long commands show their progress on
stderr, never stdout (--progress auto|bar|plain|json|none). Shell
completion: fusee completion --help. Man pages: fusee man DIR.`,
		Example: `  fusee demo                                  # the main job on a built-in example
  fusee gen /tmp/data --shards 4 --runs 2000 --seed 1
  fusee verify /tmp/data && fusee inspect /tmp/data
  fusee ring show orders.ring --json
  FUSEE_JSON=1 fusee inspect /tmp/data        # settings from the environment`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.apply(cmd); err != nil {
				return err
			}
			withLockWait(cmd, ios)
			return nil
		},
	}
	root.SetVersionTemplate(readBuildInfo(version).String() + "\n")
	root.PersistentFlags().StringVar(&cfg.file, "config", "", "read settings from this file (YAML, TOML or JSON)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })

	for _, add := range commands {
		root.AddCommand(add(ios))
	}
	addLockTimeoutFlags(root)
	root.SetOut(ios.Out) // before the completion command, which keeps the writer it sees
	root.SetErr(ios.Err)
	addCompletions(root)
	nameFlagValues(root)
	return root
}

// commands lists the constructors of the top-level commands; each command
// file adds its own in an init function.
var commands []func(*IO) *cobra.Command

func addCommand(f func(*IO) *cobra.Command) { commands = append(commands, f) }

// addQuietFlag adds -q/--quiet to cmd: nothing on stdout, for scripts
// that want only the exit code. It wins over --json, which may come from
// FUSEE_JSON or a config file.
func addQuietFlag(cmd *cobra.Command, quiet *bool, usage string) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, usage+"; wins over --json")
}

// helpPointer is the line printed under a usage error: the help of the
// command that was run, or the root's when the command is not known.
func helpPointer(cmd *cobra.Command) string {
	if cmd == nil || !cmd.HasParent() {
		return "Run 'fusee --help' for usage."
	}
	return fmt.Sprintf("Run '%s --help' for usage.", cmd.CommandPath())
}

// exactArgs requires n positional arguments, with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }

// rangeArgs requires lo to hi positional arguments, with a usage exit
// code and an error that names what is missing from the command's Use
// line ("missing <dir>") or what is extra.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && len(args) <= hi {
			return nil
		}
		usage := "usage: " + cmd.Root().Name() + " " + cmd.Use
		if cmd.HasParent() && cmd.Parent().HasParent() {
			usage = "usage: " + cmd.Parent().CommandPath() + " " + cmd.Use
		}
		names := positionalNames(cmd.Use)
		if len(args) < lo {
			if len(args) < len(names) {
				return usagef("missing %s; %s", strings.Join(names[len(args):min(lo, len(names))], " "), usage)
			}
			return usagef("want at least %d arguments, got %d; %s", lo, len(args), usage)
		}
		extra := args[hi:]
		return usagef("too many arguments: %s was not expected; %s", cutToken(strings.Join(extra, " ")), usage)
	}
}

// positionalNames lists the <name> placeholders of a Use line in order.
func positionalNames(use string) []string {
	var names []string
	for _, f := range strings.Fields(use)[1:] {
		f = strings.Trim(f, "[]")
		if strings.HasPrefix(f, "<") && strings.HasSuffix(f, ">") {
			names = append(names, f)
		}
	}
	return names
}

// cutToken shortens text quoted back to the operator (an argument, a token
// from a damaged file) to at most maxQuoted bytes, saying how much was cut.
func cutToken(s string) string {
	const maxQuoted = 80
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:cut], len(s)-cut)
}

// cutLongTokens cuts every overlong run of non-space characters in msg
// (an id, a path or a token quoted from a damaged file, which may be
// megabytes) with cutToken, so that a message stays a line.
func cutLongTokens(msg string) string {
	const long = 200
	if len(msg) <= long {
		return msg
	}
	var b strings.Builder
	for i, f := range strings.Split(msg, " ") {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(f) > long {
			f = cutToken(f)
		}
		b.WriteString(f)
	}
	return b.String()
}

// nameFlagValues makes every command's help show a flag's value as a name
// (--owned SHARDS, --lock-timeout DUR) instead of pflag's type
// (int64Slice), and drops the "(default [])" of empty lists. A flag whose
// usage already names its value with pflag's `NAME` quoting keeps it.
func nameFlagValues(c *cobra.Command) {
	fix := func(f *pflag.Flag) {
		if f.DefValue == "[]" {
			f.DefValue = ""
		}
		if strings.Contains(f.Usage, "`") || f.Value.Type() == "bool" {
			return
		}
		if _, done := f.Value.(namedValue); done {
			return
		}
		name, ok := flagValueNames[f.Name]
		if !ok {
			switch f.Value.Type() {
			case "duration":
				name = "DUR"
			case "int", "int64", "uint", "uint64":
				name = "N"
			case "float64":
				name = "F"
			default:
				name = strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			}
		}
		f.Value = namedValue{Value: f.Value, name: name}
	}
	c.LocalFlags().VisitAll(fix)
	c.PersistentFlags().VisitAll(fix)
	for _, sub := range c.Commands() {
		nameFlagValues(sub)
	}
}

// flagValueNames names the values of flags whose type says too little.
var flagValueNames = map[string]string{
	"owned": "SHARDS", "cells": "CELLS", "cell": "CELL", "namespace": "NS", "epoch": "E", "shard": "S",
	"count": "K", "config": "FILE", "store": "etcd://HOST:PORT", "cacert": "FILE", "cert": "FILE",
	"key": "FILE", "user": "NAME[:PASSWORD]", "expect-revision": "REV", "fingerprint": "CELL=FP",
	"slots": "FIRST-LAST=CELL,...", "seed": "S", "report": "FILE", "output": "FILE", "plan": "PLAN",
	"from": "POLICY.json", "cells-from": "RING", "dir": "DIR", "scratch": "DIR", "memory": "SIZE",
	"weights": "CELL=W,...", "census": "CENSUS", "add-cell": "CELL", "remove-cell": "CELL", "split": "A:B",
}

// namedValue is a flag value whose help shows name instead of its type.
type namedValue struct {
	pflag.Value
	name string
}

func (v namedValue) Type() string { return v.name }

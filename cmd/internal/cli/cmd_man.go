package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

func init() { addCommand(newManCmd) }

// manDate is the date in the generated man pages' headers. It is fixed, so
// that the pages are a pure function of the command tree and docs/man can
// be checked for staleness (TestManPagesAreCurrent); move it forward when
// regenerating for a release.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func newManCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "man <dir>",
		Short: "Write fusee's man pages (section 1), one per command, into a directory",
		Long: `Man writes a man page for fusee and for each of its commands into <dir>
(created if missing): fusee.1, fusee-gen.1, fusee-ring-show.1, ... They are
made from the same text as --help. The repository keeps them in docs/man
(a test fails when they are stale: regenerate with "go run ./cmd/fusee man
docs/man"), and release archives carry them.`,
		Example: `  fusee man /usr/local/share/man/man1
  go run ./cmd/fusee man docs/man && man -l docs/man/fusee-reshard.1`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := writeManPages(cmd.Root(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(ios.Err, "wrote man pages to %s\n", args[0])
			return nil
		},
	}
}

// writeManPages writes the man pages of root's tree into dir.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true
	escapePlaceholders(root)
	// No Title: each page gets its own, FUSEE\-RESHARD for fusee-reshard.1.
	hdr := &doc.GenManHeader{Section: "1", Date: &manDate, Source: "fusee", Manual: "fusee manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("writing man pages to %s: %w", dir, err)
	}
	return nil
}

// escapePlaceholders backslash-escapes < and > in the text cobra hands to
// the man pages' markdown (usage lines, long help, flag usage), which would
// otherwise read <dir> as an HTML tag and drop it ("fusee reshard  []").
// Code (examples, indented or fenced lines) keeps its text as it is. It
// changes the commands of root's tree, which is built afresh for each run
// of fusee.
func escapePlaceholders(c *cobra.Command) {
	c.Use, c.Short, c.Long = escapeAngles(c.Use), escapeAngles(c.Short), escapeAngles(c.Long)
	fix := func(f *pflag.Flag) { f.Usage = escapeAngles(f.Usage) }
	c.LocalNonPersistentFlags().VisitAll(fix)
	c.PersistentFlags().VisitAll(fix)
	for _, sub := range c.Commands() {
		escapePlaceholders(sub)
	}
}

// escapeAngles escapes < and > in markdown text outside code lines.
func escapeAngles(text string) string {
	esc := strings.NewReplacer("<", `\<`, ">", `\>`)
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "```"):
			fenced = !fenced
		case fenced, strings.HasPrefix(l, "\t"), strings.HasPrefix(l, "    "):
		default:
			lines[i] = esc.Replace(l)
		}
	}
	return strings.Join(lines, "\n")
}

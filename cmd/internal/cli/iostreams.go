package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/colorprofile"
	"golang.org/x/term"
)

// IO is where a command reads and writes. Data goes to Out, errors and
// progress to Err. Colour is decided per stream: only a terminal gets it,
// and NO_COLOR turns it off (colorprofile strips styles otherwise).
type IO struct {
	In  io.Reader
	Out io.Writer // styled writer over stdout
	Err io.Writer // styled writer over stderr

	OutTTY bool
	ErrTTY bool
}

func newIO(in io.Reader, out, errw io.Writer, env []string) *IO {
	o, e := colorprofile.NewWriter(out, env), colorprofile.NewWriter(errw, env)
	if noColor(env) {
		// colorprofile keeps bold and faint under NO_COLOR; we print no
		// escape sequences at all, so logs and screen readers see text.
		o.Profile, e.Profile = colorprofile.NoTTY, colorprofile.NoTTY
	}
	return &IO{In: in, Out: o, Err: e, OutTTY: isTerminal(out), ErrTTY: isTerminal(errw)}
}

// noColor reports whether NO_COLOR is set to a non-empty value.
func noColor(env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
			return true
		}
	}
	return false
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr }) // an *os.File, or Main's pipeWatcher over one
	return ok && term.IsTerminal(int(f.Fd()))
}

var (
	styleHeader = lipgloss.NewStyle().Bold(true)
	styleWarn   = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	styleBad    = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	styleGood   = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleDim    = lipgloss.NewStyle().Faint(true)
)

// printJSON writes v as indented JSON on Out.
func (io *IO) printJSON(v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine writes v as one JSON line on Out.
func (io *IO) printJSONLine(v any) error {
	return json.NewEncoder(io.Out).Encode(v)
}

// printTable renders rows under headers: a lipgloss table on a terminal,
// tab-aligned plain columns otherwise (easy to read, easy to cut).
func (io *IO) printTable(headers []string, rows [][]string) error {
	if io.OutTTY {
		t := table.New().
			Border(lipgloss.RoundedBorder()).
			BorderStyle(styleDim).
			Headers(headers...).
			Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				s := lipgloss.NewStyle().Padding(0, 1)
				if row == table.HeaderRow {
					return s.Bold(true)
				}
				return s
			})
		_, err := lipgloss.Fprintln(io.Out, t.Render())
		return err
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// warnf prints a warning line on Err.
func (io *IO) warnf(format string, args ...any) {
	fmt.Fprintln(io.Err, styleWarn.Render("warning: "+fmt.Sprintf(format, args...)))
}

// progressf prints a progress line on Err; on a terminal it rewrites the
// current line, elsewhere it prints plain lines.
func (io *IO) progressf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if io.ErrTTY {
		fmt.Fprintf(io.Err, "\r\x1b[2K%s", msg)
		return
	}
	fmt.Fprintln(io.Err, msg)
}

// progressDone ends a terminal progress line.
func (io *IO) progressDone() {
	if io.ErrTTY {
		fmt.Fprintln(io.Err)
	}
}

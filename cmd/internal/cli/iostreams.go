package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// Data is stdout as it is, for output that carries no styles to strip
	// (dump's JSON lines, whose strings escape every control character):
	// Out would scan every byte for escape sequences.
	Data io.Writer

	OutTTY bool
	ErrTTY bool

	// Width is how many columns tables may use on Out: the terminal's
	// width, else $COLUMNS when set, else 0 (no limit: a file or a pipe
	// gets whole rows). ErrWidth is the same for Err (a progress bar).
	Width, ErrWidth int

	errRaw   io.Writer        // stderr without the colour profile: a bar's cursor movement
	dumbTerm bool             // TERM=dumb: no bar, even on a terminal
	clock    func() time.Time // progress's clock (nil: time.Now); tests set it
	active   *progress        // the progress display on Err, if any
}

func newIO(in io.Reader, out, errw io.Writer, env []string) *IO {
	o, e := colorprofile.NewWriter(out, env), colorprofile.NewWriter(errw, env)
	// colorprofile sees a terminal only in an *os.File-like writer; Main's
	// stdout is a pipeWatcher over one, whose tables went uncoloured.
	o.Profile, e.Profile = colorprofile.Detect(withFd(out), env), colorprofile.Detect(withFd(errw), env)
	if noColor(env) {
		// colorprofile keeps bold and faint under NO_COLOR; we print no
		// escape sequences at all, so logs and screen readers see text.
		o.Profile, e.Profile = colorprofile.NoTTY, colorprofile.NoTTY
	}
	data := out
	if data == nil {
		data = o
	}
	return &IO{In: in, Out: o, Err: e, Data: data, OutTTY: isTerminal(out), ErrTTY: isTerminal(errw), Width: outputWidth(out, env),
		ErrWidth: outputWidth(errw, env), errRaw: errw, dumbTerm: envValue(env, "TERM") == "dumb"}
}

// withFd is w as colorprofile's terminal test wants it (a file with Fd,
// Read and Close) when w has a descriptor, else w.
func withFd(w io.Writer) io.Writer {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return w
	}
	return fdWriter{Writer: w, fd: f.Fd()}
}

// fdWriter is a writer with its descriptor, for colorprofile.Detect only.
type fdWriter struct {
	io.Writer
	fd uintptr
}

func (w fdWriter) Fd() uintptr            { return w.fd }
func (fdWriter) Read([]byte) (int, error) { return 0, io.EOF }
func (fdWriter) Close() error             { return nil }

// outputWidth is the terminal's width when w is one, else $COLUMNS, else 0.
func outputWidth(w io.Writer, env []string) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "COLUMNS="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// noColor reports whether NO_COLOR is set to a non-empty value.
func noColor(env []string) bool { return envValue(env, "NO_COLOR") != "" }

// envValue is name's value in env ("" when unset); the last entry wins.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val
		}
	}
	return v
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

// printTable renders rows under headers, in one style everywhere:
// headers in capitals, numbers (counts, sizes, "?") right-aligned, and no
// wider than the output's width (see IO.Width): columns that do not fit
// go to a second block under the first, each block led by the first
// column. A terminal gets a lipgloss table, anything else plain columns
// two spaces apart (easy to read, easy to cut).
func (io *IO) printTable(headers []string, rows [][]string) error {
	heads := make([]string, len(headers))
	for i, h := range headers {
		heads[i] = strings.ToUpper(h)
	}
	right := numericColumns(rows, len(heads))
	for i, cols := range tableBlocks(heads, rows, io.Width, io.OutTTY) {
		if i > 0 {
			fmt.Fprintln(io.Out)
		}
		h, b, r := pickColumns(heads, rows, right, cols)
		if err := io.printBlock(h, b, r); err != nil {
			return err
		}
	}
	return nil
}

func (io *IO) printBlock(headers []string, rows [][]string, right []bool) error {
	if io.OutTTY {
		t := table.New().
			Border(lipgloss.RoundedBorder()).
			BorderStyle(styleDim).
			Headers(headers...).
			Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				s := lipgloss.NewStyle().Padding(0, 1)
				if right[col] {
					s = s.Align(lipgloss.Right)
				}
				if row == table.HeaderRow {
					return s.Bold(true)
				}
				return s
			})
		// io.Out already fits the styles to its terminal: lipgloss.Fprintln
		// would wrap it again, see no terminal in it and strip them all.
		_, err := fmt.Fprintln(io.Out, t.Render())
		return err
	}
	widths := columnWidths(headers, rows)
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case right[i]:
				b.WriteString(pad + c)
			case i < len(cells)-1:
				b.WriteString(c + pad)
			default:
				b.WriteString(c)
			}
			if i < len(cells)-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(io.Out, b.String())
	}
	line(headers)
	for _, r := range rows {
		line(r)
	}
	return nil
}

// numericRE matches a cell that is a number: a count, a signed change, a
// size with its unit, or "?" for unknown.
var numericRE = regexp.MustCompile(`^([-+]?[0-9][0-9.,]*( [KMGT]?i?B)?|\?)$`)

// numericColumns marks the columns whose every non-empty cell is a number.
func numericColumns(rows [][]string, n int) []bool {
	right := make([]bool, n)
	for c := range right {
		right[c] = c > 0 // the first column names the row
		seen := false
		for _, r := range rows {
			if c < len(r) && r[c] != "" {
				seen = true
				if !numericRE.MatchString(r[c]) {
					right[c] = false
				}
			}
		}
		right[c] = right[c] && seen
	}
	return right
}

func columnWidths(headers []string, rows [][]string) []int {
	w := make([]int, len(headers))
	for i, h := range headers {
		w[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(w) {
				w[i] = max(w[i], utf8.RuneCountInString(c))
			}
		}
	}
	return w
}

// tableBlocks splits the columns into blocks no wider than width (0: no
// limit), each starting with column 0. A column too wide on its own still
// gets a block.
func tableBlocks(headers []string, rows [][]string, width int, boxed bool) [][]int {
	all := make([]int, len(headers))
	for i := range all {
		all[i] = i
	}
	if width <= 0 || len(headers) < 2 {
		return [][]int{all}
	}
	widths := columnWidths(headers, rows)
	cell := func(i int) int { // a column's width with its separator
		if boxed {
			return widths[i] + 3 // padding on both sides and a border
		}
		return widths[i] + 2
	}
	var blocks [][]int
	cur, used := []int{0}, cell(0)+1
	for i := 1; i < len(headers); i++ {
		if used+cell(i) > width && len(cur) > 1 {
			blocks = append(blocks, cur)
			cur, used = []int{0}, cell(0)+1
		}
		cur = append(cur, i)
		used += cell(i)
	}
	return append(blocks, cur)
}

func pickColumns(headers []string, rows [][]string, right []bool, cols []int) ([]string, [][]string, []bool) {
	h := make([]string, len(cols))
	r := make([]bool, len(cols))
	for j, c := range cols {
		h[j], r[j] = headers[c], right[c]
	}
	body := make([][]string, len(rows))
	for i, row := range rows {
		body[i] = make([]string, len(cols))
		for j, c := range cols {
			if c < len(row) {
				body[i][j] = row[c]
			}
		}
	}
	return h, body, r
}

// warnf prints a warning line on Err, under a progress bar's line.
func (io *IO) warnf(format string, args ...any) {
	io.active.clear()
	fmt.Fprintln(io.Err, styleWarn.Render("warning: "+fmt.Sprintf(format, args...)))
}

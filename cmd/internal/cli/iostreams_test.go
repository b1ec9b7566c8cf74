package cli

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Styled output reaches the stream as plain text when NO_COLOR is set, even
// where the terminal profile would allow colour (forced here with
// CLICOLOR_FORCE), and carries escapes otherwise.
func TestNoColorStripsEveryEscape(t *testing.T) {
	for _, tc := range []struct {
		env         []string
		wantEscapes bool
	}{
		{[]string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}, true},
		{[]string{"CLICOLOR_FORCE=1", "TERM=xterm-256color", "NO_COLOR=1"}, false},
	} {
		var out, errb bytes.Buffer
		ios := newIO(nil, &out, &errb, tc.env)
		ios.Out.Write([]byte(styleBad.Render("bad") + " " + styleHeader.Render("head") + "\n"))
		ios.warnf("careful")
		got := out.String() + errb.String()
		if has := strings.Contains(got, "\x1b["); has != tc.wantEscapes {
			t.Errorf("env %v: escapes present = %v, want %v: %q", tc.env, has, tc.wantEscapes, got)
		}
		if !strings.Contains(got, "bad") || !strings.Contains(got, "head") || !strings.Contains(got, "warning: careful") {
			t.Errorf("env %v: text lost: %q", tc.env, got)
		}
	}
}

// printTable on plain output: no line wider than the width (unless one
// column pair alone is wider), every cell printed once in its row,
// numbers right-aligned and words left-aligned, headers in capitals.
func TestPrintTableFitsAndAligns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ncols := rapid.IntRange(1, 18).Draw(t, "cols")
		nrows := rapid.IntRange(1, 6).Draw(t, "rows")
		width := rapid.SampledFrom([]int{0, 40, 80, 120}).Draw(t, "width")
		headers := make([]string, ncols)
		numeric := make([]bool, ncols)
		for c := range headers {
			headers[c] = rapid.StringMatching(`[a-z]{1,10}`).Draw(t, "header")
			numeric[c] = c > 0 && rapid.Bool().Draw(t, "numeric")
		}
		rows := make([][]string, nrows)
		for r := range rows {
			rows[r] = make([]string, ncols)
			for c := range rows[r] {
				if numeric[c] {
					rows[r][c] = rapid.StringMatching(`[0-9]{1,9}( KiB)?`).Draw(t, "number")
				} else {
					rows[r][c] = rapid.StringMatching(`[a-z][a-z-]{0,11}`).Draw(t, "word")
				}
			}
		}
		var out bytes.Buffer
		ios := &IO{Out: &out, Width: width}
		if err := ios.printTable(headers, rows); err != nil {
			t.Fatal(err)
		}
		widths := columnWidths(headers, rows)
		got := make([][]string, nrows) // cells seen per row, after the first
		blocks := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n\n")
		for _, b := range blocks {
			lines := strings.Split(b, "\n")
			if len(lines) != nrows+1 {
				t.Fatalf("a block of %d lines, want %d:\n%s", len(lines), nrows+1, out.String())
			}
			heads := strings.Fields(lines[0])
			if width > 0 && len(heads) > 2 && len(lines[0]) > width {
				t.Fatalf("header line of %d columns exceeds %d:\n%s", len(lines[0]), width, out.String())
			}
			for _, h := range heads {
				if h != strings.ToUpper(h) {
					t.Fatalf("header %q not in capitals", h)
				}
			}
			for r, line := range lines[1:] {
				if width > 0 && len(heads) > 2 && len(line) > width {
					t.Fatalf("line of %d columns exceeds %d:\n%s", len(line), width, out.String())
				}
				if !strings.HasPrefix(line, rows[r][0]) {
					t.Fatalf("block row %d does not start with its name %q: %q", r, rows[r][0], line)
				}
				got[r] = append(got[r], line)
			}
		}
		// Rebuild each row from its blocks by column position and compare.
		for r := range rows {
			col := 1
			for bi, b := range blocks {
				lines := strings.Split(b, "\n")
				header, line := lines[0], got[r][bi]
				pos := widths[0] + 2
				for pos < len(header) {
					w := widths[col]
					cell := line[pos:min(pos+w, len(line))]
					want := rows[r][col]
					if numeric[col] && cell != strings.Repeat(" ", w-len(want))+want {
						t.Fatalf("row %d column %d: %q, want %q right-aligned in %d", r, col, cell, want, w)
					}
					if !numeric[col] && strings.TrimRight(cell, " ") != want {
						t.Fatalf("row %d column %d: %q, want %q left-aligned", r, col, cell, want)
					}
					pos += w + 2
					col++
				}
			}
			if col != ncols {
				t.Fatalf("row %d: %d columns printed, want %d:\n%s", r, col, ncols, out.String())
			}
		}
	})
}

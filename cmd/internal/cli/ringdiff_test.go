package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The diff is exact: its ' ' and '-' lines rebuild the ring before, its ' '
// and '+' lines the ring after, every shard once; its strips are the same
// width, column for column one layout, with '^' exactly under the columns
// that hold a shard changing cell.
func TestRingDiffProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards := rapid.IntRange(1, 600).Draw(t, "shards")
		ncells := rapid.IntRange(1, 5).Draw(t, "cells")
		width := rapid.IntRange(1, 120).Draw(t, "width")
		cells := make([]string, ncells)
		for i := range cells {
			cells[i] = fmt.Sprintf("c%d", i)
		}
		k := newRingKeys(cells)
		ring := func(label string) []int {
			own := make([]int, shards)
			runLen := rapid.IntRange(1, 200).Draw(t, label+"-runlen")
			c := 0
			for s := range own {
				if rapid.IntRange(0, runLen).Draw(t, label) == 0 {
					c = rapid.IntRange(0, ncells-1).Draw(t, label+"-cell")
				}
				own[s] = c
			}
			return own
		}
		before := ring("before")
		after := append([]int(nil), before...)
		for range rapid.IntRange(0, 3).Draw(t, "moves") {
			lo := rapid.IntRange(0, shards-1).Draw(t, "lo")
			hi := rapid.IntRange(lo, shards-1).Draw(t, "hi")
			c := rapid.IntRange(0, ncells-1).Draw(t, "to")
			for s := lo; s <= hi; s++ {
				after[s] = c
			}
		}

		rebuilt := map[byte][]string{' ': make([]string, shards), '-': make([]string, shards), '+': make([]string, shards)}
		lineRE := regexp.MustCompile(`^([ +-]) (\d+)(?:-(\d+))? +(\S+)$`)
		for _, l := range ringDiffLines(k, before, after) {
			m := lineRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %q", l)
			}
			lo, _ := strconv.Atoi(m[2])
			hi := lo
			if m[3] != "" {
				hi, _ = strconv.Atoi(m[3])
			}
			for s := lo; s <= hi; s++ {
				if rebuilt[m[1][0]][s] != "" {
					t.Fatalf("shard %d twice in %q lines", s, m[1])
				}
				rebuilt[m[1][0]][s] = m[4]
			}
		}
		for s := range shards {
			b, a := rebuilt[' '][s]+rebuilt['-'][s], rebuilt[' '][s]+rebuilt['+'][s]
			if b != cells[before[s]] || a != cells[after[s]] {
				t.Fatalf("shard %d: diff says %q -> %q, rings say %s -> %s", s, b, a, cells[before[s]], cells[after[s]])
			}
		}

		segs, _, rows := ringDiffStrips(before, after, width, false)
		n := min(shards, width)
		if len(rows[0]) != n || len(rows[1]) != n || len(rows[2]) > n {
			t.Fatalf("rows of %d, %d, %d columns, want %d", len(rows[0]), len(rows[1]), len(rows[2]), n)
		}
		marks := rows[2] + strings.Repeat(" ", n-len(rows[2]))
		col := 0
		for _, sg := range segs {
			changed := false
			for s := sg.lo; s < sg.lo+sg.n; s++ {
				changed = changed || before[s] != after[s]
			}
			for range sg.cols {
				if (marks[col] == '^') != changed {
					t.Fatalf("column %d (shards %d-%d): mark %q, changed %v", col, sg.lo, sg.lo+sg.n-1, marks[col], changed)
				}
				if sg.owner >= 0 && (rows[0][col] == '*' || rows[1][col] == '*') {
					t.Fatalf("column %d of one pair drawn as several", col)
				}
				col++
			}
		}
	})
}

// ring plan's diff: the strips fit the width and line up, the moved
// columns are marked, '-' and '+' lines are red and green only on a colour
// terminal, and NO_COLOR leaves the same text without escapes.
func TestRingPlanDiffOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "o.ring")
	if _, errs, code := runFusee(t, nil, "ring", "init", path, "--namespace", "o", "--shards", "1024", "--cells", "a,b"); code != 0 {
		t.Fatal(errs)
	}
	colour := []string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}
	want := map[int][]string{
		40: {
			"before  AAAAAAAAAAAAAAAABBBBBBBBBBBBBBBB",
			"after   AAAAAAAAAACCCCCCBBBBBBBBBBCCCCCC",
			"moved             ^^^^^^          ^^^^^^",
		},
		20: {
			"before  AAAAAABBBBBB",
			"after   AAAACCBBBBCC",
			"moved       ^^    ^^",
		},
	}
	for _, tc := range []struct {
		env   []string
		width int
	}{
		{[]string{"COLUMNS=40"}, 40},
		{[]string{"COLUMNS=20", "NO_COLOR=1"}, 20},
		{append([]string{"COLUMNS=40"}, colour...), 40},
		{append([]string{"COLUMNS=20", "NO_COLOR=1"}, colour...), 20},
	} {
		out, errs, code := runFusee(t, tc.env, "ring", "plan", path, "--add-cell", "c")
		if code != 0 {
			t.Fatalf("env %v: %s", tc.env, errs)
		}
		env := strings.Join(tc.env, " ")
		coloured := strings.Contains(env, "CLICOLOR_FORCE") && !strings.Contains(env, "NO_COLOR")
		if got := strings.Contains(out, "\x1b[31m- ") && strings.Contains(out, "\x1b[32m+ "); got != coloured {
			t.Errorf("env %v: coloured -/+ lines %v, want %v", tc.env, got, coloured)
		}
		if !coloured && strings.Contains(out, "\x1b[") {
			t.Errorf("env %v: escapes in plain output", tc.env)
		}
		plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, "")
		lines := strings.Split(plain, "\n")
		if got := strings.Join(lines[1:4], "\n"); got != strings.Join(want[tc.width], "\n") {
			t.Errorf("env %v: strips\n%s\nwant\n%s", tc.env, got, strings.Join(want[tc.width], "\n"))
		}
		for _, l := range []string{"  0-341     a", "- 342-511   a", "+ 342-511   c", "  512-852   b", "- 853-1023  b", "+ 853-1023  c"} {
			if !strings.Contains(plain, "\n"+l+"\n") {
				t.Errorf("env %v: no line %q in\n%s", tc.env, l, plain)
			}
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/ringfile"
)

// The orders example's epoch 2 (docs/rings.md): cellA 0-341, cellC
// 342-511, cellB 512-852, cellC 853-1023; keys A, B, C as declared.
func ordersEpoch2(t *testing.T) (*ringKeys, []int) {
	t.Helper()
	var ring ringfile.Ring
	for _, part := range []struct {
		lo, hi int
		cell   string
	}{{0, 341, "cellA"}, {342, 511, "cellC"}, {512, 852, "cellB"}, {853, 1023, "cellC"}} {
		for s := part.lo; s <= part.hi; s++ {
			ring = append(ring, ringfile.Slot{Shard: s, Cell: part.cell})
		}
	}
	k := newRingKeys([]string{"cellA", "cellB", "cellC"})
	return k, k.owners(ring, 1024)
}

// The strip of a 1024-shard ring at several widths: each run keeps a
// column at least, the rest goes by length, and the strip is exactly as
// wide as asked.
func TestRingStripWidths(t *testing.T) {
	_, owners := ordersEpoch2(t)
	for width, want := range map[int]string{
		80: "AAAAAAAAAAAAAAAAAAAAAAAAAACCCCCCCCCCCCCCBBBBBBBBBBBBBBBBBBBBBBBBBBCCCCCCCCCCCCCC",
		40: "AAAAAAAAAAAAACCCCCCCBBBBBBBBBBBBBCCCCCCC",
		20: "AAAAAACCCCBBBBBBCCCC",
		6:  "AACBBC",
		4:  "ACBC",
		3:  "A**",
		1:  "*",
	} {
		if got := renderStrip(ringStrip(owners, width), false); got != want {
			t.Errorf("width %d:\n got %s\nwant %s", width, got, want)
		}
	}
	// Fewer shards than columns: one column per shard.
	k := newRingKeys([]string{"a", "b"})
	small := k.owners(ringfile.EvenRing(8, []string{"a", "b"}), 8)
	if got := renderStrip(ringStrip(small, 80), false); got != "AAAABBBB" {
		t.Errorf("8 shards at 80 columns: %s", got)
	}
	// A shard on no cell and one on two (a file shown with errors).
	bad := k.owners(ringfile.Ring{{Shard: 0, Cell: "a"}, {Shard: 1, Cell: "a"}, {Shard: 1, Cell: "b"}, {Shard: 3, Cell: "b"}}, 4)
	if got := renderStrip(ringStrip(bad, 80), false); got != "A*?B" {
		t.Errorf("hole and double: %s", got)
	}
	if got := ringStripScale(1024, 12); got != "0       1023" {
		t.Errorf("scale: %q", got)
	}
	if got := ringStripScale(1024, 5); got != "" {
		t.Errorf("scale that does not fit: %q", got)
	}
}

// For any ring and width: the strip is min(shards, width) columns; with a
// column per shard it is the ring itself; else, when every run fits, it
// shows every run in order, each with at least one column and within one
// column of its proportional share; else each column shows its slice's
// cell, or '*' for a mixed slice.
func TestRingStripProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards := rapid.IntRange(1, 1024).Draw(t, "shards")
		ncells := rapid.IntRange(1, 6).Draw(t, "cells")
		width := rapid.IntRange(1, 200).Draw(t, "width")
		runLen := rapid.IntRange(1, 300).Draw(t, "runlen")
		owners := make([]int, shards)
		cell := 0
		for s := range owners {
			if rapid.IntRange(0, runLen).Draw(t, "switch") == 0 {
				cell = rapid.IntRange(0, ncells-1).Draw(t, "cell")
			}
			owners[s] = cell
		}
		segs := ringStrip(owners, width)
		var cols []int // the owner of each column
		for i, sg := range segs {
			if sg.cols < 1 {
				t.Fatalf("segment %d has %d columns", i, sg.cols)
			}
			for range sg.cols {
				cols = append(cols, sg.owner)
			}
		}
		if len(cols) != min(shards, width) {
			t.Fatalf("%d columns, want %d", len(cols), min(shards, width))
		}
		var runs []ringStripSeg
		for _, o := range owners {
			if n := len(runs); n > 0 && runs[n-1].owner == o {
				runs[n-1].cols++
			} else {
				runs = append(runs, ringStripSeg{owner: o, cols: 1})
			}
		}
		switch {
		case shards <= width:
			for s, o := range owners {
				if cols[s] != o {
					t.Fatalf("shard %d: column shows %d, owner %d", s, cols[s], o)
				}
			}
		case len(runs) <= width:
			if len(segs) != len(runs) {
				t.Fatalf("%d segments for %d runs", len(segs), len(runs))
			}
			spare := float64(width - len(runs))
			for i, r := range runs {
				share := 1 + spare*float64(r.cols)/float64(shards)
				if segs[i].owner != r.owner || float64(segs[i].cols) < share-1 || float64(segs[i].cols) > share+1 {
					t.Fatalf("run %d (%d shards of %d): %d columns of %d, share %.2f", i, r.cols, r.owner, segs[i].cols, segs[i].owner, share)
				}
			}
		default:
			for c, o := range cols {
				lo, hi := c*shards/width, (c+1)*shards/width
				want := owners[lo]
				for _, x := range owners[lo:hi] {
					if x != want {
						want = ringOwnerSeveral
					}
				}
				if o != want {
					t.Fatalf("column %d (shards %d-%d) shows %d, want %d", c, lo, hi-1, o, want)
				}
			}
		}
	})
}

// ring show draws each epoch's strip under its title, no wider than the
// output (80 columns, 40, and the default for a pipe), coloured only on a
// colour terminal: NO_COLOR gives the same text without any escape.
func TestRingShowStrip(t *testing.T) {
	data, err := os.ReadFile("testdata/script/ring_show.txtar")
	if err != nil {
		t.Fatal(err)
	}
	_, ring, _ := strings.Cut(string(data), "-- orders.ring --\n")
	ring, _, _ = strings.Cut(ring, "-- ")
	path := filepath.Join(t.TempDir(), "orders.ring")
	if err := os.WriteFile(path, []byte(ring), 0o644); err != nil {
		t.Fatal(err)
	}
	colour := []string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}
	for _, tc := range []struct {
		env   []string
		width int
	}{
		{nil, 80},
		{[]string{"COLUMNS=80"}, 80},
		{[]string{"COLUMNS=40"}, 40},
		{[]string{"COLUMNS=132", "NO_COLOR=1"}, 132},
		{append([]string{"COLUMNS=40"}, colour...), 40},
		{append([]string{"COLUMNS=40", "NO_COLOR=1"}, colour...), 40},
	} {
		out, errs, code := runFusee(t, tc.env, "ring", "show", path)
		if code != 0 {
			t.Fatalf("env %v: exit %d: %s", tc.env, code, errs)
		}
		escapes := strings.Contains(out, "\x1b[")
		wantEscapes := strings.Contains(strings.Join(tc.env, " "), "CLICOLOR_FORCE") && !strings.Contains(strings.Join(tc.env, " "), "NO_COLOR")
		if escapes != wantEscapes {
			t.Errorf("env %v: escapes %v, want %v", tc.env, escapes, wantEscapes)
		}
		plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, "")
		lines := strings.Split(plain, "\n")
		var strips []string
		for i, l := range lines {
			if strings.HasPrefix(l, "epoch ") {
				strips = append(strips, lines[i+1])
				if !strings.HasPrefix(lines[i+2], "0 ") || !strings.HasSuffix(lines[i+2], " 1023") || len(lines[i+2]) != tc.width {
					t.Errorf("env %v: scale %q", tc.env, lines[i+2])
				}
				if !strings.HasPrefix(lines[i+3], "key: A cellA") {
					t.Errorf("env %v: legend %q", tc.env, lines[i+3])
				}
			}
		}
		_, owners := ordersEpoch2(t)
		want := []string{
			renderStrip(ringStrip(owners, tc.width), false),
			strings.Repeat("A", tc.width/2) + strings.Repeat("B", tc.width-tc.width/2),
			strings.Repeat("A", tc.width),
		}
		if strings.Join(strips, "\n") != strings.Join(want, "\n") {
			t.Errorf("env %v: strips\n%s\nwant\n%s", tc.env, strings.Join(strips, "\n"), strings.Join(want, "\n"))
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "key: ") && len(l) > tc.width {
				t.Errorf("env %v: legend wider than %d: %q", tc.env, tc.width, l)
			}
		}
	}
}

// The legend wraps to the width without splitting an item.
func TestRingLegendWraps(t *testing.T) {
	items := []string{"A cellA", "B cellB", "C a-much-longer-cell-name", "D d"}
	got := strings.Join(ringWrap("key: ", items, 24), "\n")
	want := "key: A cellA  B cellB\n     C a-much-longer-cell-name\n     D d"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := strings.Join(ringWrap("key: ", items, 0), "\n"); strings.Contains(got, "\n") {
		t.Errorf("no width: %q", got)
	}
}

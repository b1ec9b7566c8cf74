package ringfile

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestGoldenRingRoundTrips(t *testing.T) {
	data := readFile(t, goldenRing)
	p, err := Parse(goldenRing, data)
	if err != nil {
		t.Fatal(err)
	}
	if fs := Validate(p); len(fs) != 0 {
		t.Fatalf("golden file has findings: %v", fs)
	}
	if got := Format(p); !bytes.Equal(got, data) {
		t.Errorf("Format(Parse(golden)) differs:\n%s", got)
	}
	if len(p.Epochs) != 3 || p.Current != 2 || p.Revision != 4 || len(p.Epoch(2).Shards) != 1024 {
		t.Errorf("unexpected header: %+v", p)
	}
	if got := p.Epoch(2).Ring.Owners(400); len(got) != 1 || got[0].Cell != "cellC" || got[0].Region != "eu-west" || got[0].Line != 21 {
		t.Errorf("shard 400 of epoch 2: %+v", got)
	}
}

// A format 1 file (one shard count for every epoch) reads unchanged: each
// epoch's set is 0..S-1, and the next write turns it into format 2, the
// golden file's text.
func TestFormatOneReadsAsEveryEpochsSet(t *testing.T) {
	v1 := readFile(t, "../testdata/ring/orders.v1.ring")
	p := mustParse(t, string(v1))
	if fs := Validate(p); len(fs) != 0 {
		t.Fatalf("format 1 golden has findings: %v", fs)
	}
	for _, e := range p.Epochs {
		if !slices.Equal(e.Shards, ShardsUpTo(1024)) {
			t.Errorf("epoch %d's set is %s, want 0-1023", e.Number, FormatShardSet(e.Shards))
		}
	}
	if got, want := Format(p), readFile(t, goldenRing); !bytes.Equal(got, want) {
		t.Errorf("format 1 written again:\n%s\nwant\n%s", got, want)
	}
	// A shard missing from a format 1 ring is still reported: the header's
	// count is every epoch's set.
	hole := strings.Replace(string(v1), "  0-1023 cellA\n", "  0-1022 cellA\n", 1)
	holed, _ := Parse("hole.ring", []byte(hole))
	wantErrContains(t, Check(holed), "epoch 0: shard 1023 is placed on no cell")
}

func TestFormatIsCanonical(t *testing.T) {
	// Cells out of order, a duplicate declaration, comments, extra spaces
	// and single-shard lines that merge: all normalise to one text.
	messy := `fusee-ring 1
# a comment
namespace   ns
current-epoch 0
revision 1
shards 4
cell b
cell a
epoch 0 open
    0 a
    1 a
	2-3 b
`
	p := mustParse(t, messy)
	want := fileBanner + `fusee-ring 2
namespace ns
revision 1
current-epoch 0

cell a
cell b

epoch 0 open shards=0-3
  0-1 a
  2-3 b
`
	if got := string(Format(p)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	again := mustParse(t, want)
	if !bytes.Equal(Format(again), []byte(want)) {
		t.Error("canonical text does not reproduce itself")
	}
}

func TestFormatKeepsRingOrder(t *testing.T) {
	// The reference mints into a cell's shards in ring order, so an
	// imported ring out of shard order must keep its order.
	p := mustParse(t, "fusee-ring 1\nnamespace ns\nshards 4\nrevision 1\ncurrent-epoch 0\ncell a\ncell b\nepoch 0 open\n  3 a\n  0-1 b\n  2 a\n")
	if got := p.Epoch(0).Ring.Owned("a"); len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Errorf("owned in ring order: %v", got)
	}
	if !strings.Contains(string(Format(p)), "  3 a\n  0-1 b\n  2 a\n") {
		t.Errorf("ring order lost:\n%s", Format(p))
	}
}

func TestParseErrorsCarryLines(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"no magic", "namespace ns\n", []string{"test.ring:1: the file must start with `fusee-ring 2`"}},
		{"version", "fusee-ring 3\n", []string{"test.ring:1: unsupported format"}},
		{"shards header in format 2", "fusee-ring 2\nshards 4\n", []string{"test.ring:2: `shards N` is format 1's"}},
		{"epoch without its set", "fusee-ring 2\nepoch 0 open\n", []string{"test.ring:2: want `epoch N open|draining|retired shards=LIST`"}},
		{"bad set", "fusee-ring 2\nepoch 0 open shards=3-1\n", []string{"test.ring:2: epoch 0: shards=: shard range 3-1 is reversed"}},
		{"set twice", "fusee-ring 2\nepoch 0 open shards=0-3,2\n", []string{"test.ring:2: epoch 0: shards=: shard 2 is listed twice"}},
		{"set attribute", "fusee-ring 2\nepoch 0 open slots=1\n", []string{`test.ring:2: unknown epoch attribute "slots=1"`}},
		{"unknown key", "fusee-ring 1\nnamespace ns\nshards 4\nrevision 0\ncurrent-epoch none\ncolour blue\n", []string{`test.ring:6: unknown key "colour"`}},
		{"duplicate", "fusee-ring 1\nnamespace ns\nnamespace ns\n", []string{"test.ring:3: duplicate namespace (first on line 2)"}},
		{"missing", "fusee-ring 1\nnamespace ns\n", []string{"missing `shards` line", "missing `revision` line", "missing `current-epoch` line"}},
		{"bad number", "fusee-ring 1\nshards 012\n", []string{`test.ring:2: shards: "012" is not a plain decimal number`}},
		{"too many shards", "fusee-ring 1\nshards 2048\n", []string{"test.ring:2: shards: 2048 is larger than 1024"}},
		{"bad status", "fusee-ring 1\nepoch 0 OPEN\n", []string{`test.ring:2: epoch 0: status "OPEN"`}},
		{"duplicate epoch", "fusee-ring 1\nepoch 0 open\nepoch 0 open\n", []string{"test.ring:3: duplicate epoch 0 (first on line 2)"}},
		{"epoch order", "fusee-ring 1\nepoch 1 draining\nepoch 0 open\n", []string{"test.ring:3: epoch 0 comes after epoch 1"}},
		{"slot outside epoch", "fusee-ring 1\n  0-3 a\n", []string{"test.ring:2: indented slot line outside an epoch"}},
		{"reversed range", "fusee-ring 1\nepoch 0 open\n  3-1 a\n", []string{"test.ring:3: shard range 3-1 is reversed"}},
		{"empty region", "fusee-ring 1\nepoch 0 open\n  0 a@\n", []string{"test.ring:3: slot 0: empty region"}},
		{"cell attr", "fusee-ring 1\ncell a colour=blue\n", []string{`test.ring:2: unknown cell attribute "colour=blue"`}},
		{"cell twice", "fusee-ring 1\ncell a fingerprint=x\ncell a fingerprint=x\n", []string{"test.ring:3: duplicate declaration of cell a (first on line 2)"}},
		{"header late", "fusee-ring 1\ncell a\nshards 4\n", []string{"test.ring:3: shards must come before the cell and epoch lines"}},
		{"crlf", "fusee-ring 1\r\n", []string{"test.ring:1: carriage return"}},
		{"empty", "", []string{"empty file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("test.ring", []byte(c.text))
			wantErrContains(t, err, c.want...)
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	_, err := Parse("test.ring", []byte("fusee-ring 1\nnamespace ns\nshards x\nrevision -1\ncurrent-epoch 0\nwhat\n"))
	wantErrContains(t, err, ":3:", ":4:", ":6:")
}

func TestFormatShardSet(t *testing.T) {
	if got := FormatShardSet([]int{9, 0, 1, 2, 7, 10, 11, 3}); got != "0-3, 7, 9-11" {
		t.Errorf("got %q", got)
	}
}

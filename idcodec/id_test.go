package idcodec

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

const u = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID // Raw is filled in from in
	}{
		{"orders.e3.s17." + u, ID{Namespace: "orders", Epoch: 3, Shard: 17, ULID: u}},
		{"orders.ceu-1.e3.s17." + u, ID{Namespace: "orders", Cell: "eu-1", Epoch: 3, Shard: 17, ULID: u}},
		// The cell comes before the epoch: after the shard it is rest.
		{"ns.e0.s0.cfoo.bar", ID{Namespace: "ns", ULID: "cfoo.bar"}},
		{"ns.cfoo.e1.s2.x.y", ID{Namespace: "ns", Cell: "foo", Epoch: 1, Shard: 2, ULID: "x.y"}},
		// A cell label may itself start with 'e'.
		{"ns.ce1.e2.s3.x", ID{Namespace: "ns", Cell: "e1", Epoch: 2, Shard: 3, ULID: "x"}},
		{"ns.e007.s0010.x", ID{Namespace: "ns", Epoch: 7, Shard: 10, ULID: "x"}},
		{"ns.e9223372036854775807.s0.x", ID{Namespace: "ns", Epoch: 9223372036854775807, ULID: "x"}},
		{"ns.e1.s2..", ID{Namespace: "ns", Epoch: 1, Shard: 2, ULID: "."}},
		{"ns.e1.s2.x\ty", ID{Namespace: "ns", Epoch: 1, Shard: 2, ULID: "x\ty"}},
		{"n\ns.e1.s2.x", ID{Namespace: "n\ns", Epoch: 1, Shard: 2, ULID: "x"}},
		{"注文.c東京.e1.s2.😀", ID{Namespace: "注文", Cell: "東京", Epoch: 1, Shard: 2, ULID: "😀"}},
	} {
		got := Parse(tc.in)
		tc.want.Raw = tc.in
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.in || IsLegacy(tc.in) {
			t.Errorf("Parse(%q): String() = %q, IsLegacy = %v", tc.in, got.String(), IsLegacy(tc.in))
		}
	}
}

func TestParseLegacy(t *testing.T) {
	for _, in := range []string{
		"wfi_abc",
		"",
		"ns",
		"ns.eX.s0.x",
		"ns.e99999999999999999999.s0.x",
		"ns.e9223372036854775808.s0.x",
		"ns.e0.s99999999999999999999.x",
		"ns.cfoo.e1.s99999999999999999999.x",
		"ns.e0.s0.",
		"ns.e0.s0",
		".e0.s0.x",
		"ns.c.e1.s2.x",
		"ns.cx.cy.e1.s2.z",
		"ns.e.s2.x",
		"ns.e1.s.x",
		"ns.e1s2.x",
		"ns.e-1.s2.x",
		"ns.e+1.s2.x",
		"ns.E1.s2.x",
		"ns.e１.s2.x", // a fullwidth digit is not \d
		"ns.e0.s0.x\ny",
		"ns.e0.s0.x\n",
		"ns.e0.s0.x\r",
		"ns.e0.s0.x\u0085",
		"ns.e0.s0.x\u2028",
		"ns.e0.s0.x\u2029",
		"ns..e0.s0.x",
	} {
		got := Parse(in)
		if want := (ID{Raw: in, Legacy: true}); got != want {
			t.Errorf("Parse(%q) = %+v, want legacy", in, got)
		}
		if !IsLegacy(in) {
			t.Errorf("IsLegacy(%q) = false", in)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		ns, cell     string
		epoch, shard int64
		ulid, want   string
	}{
		{"orders", "", 3, 17, u, "orders.e3.s17." + u},
		{"orders", "eu1", 3, 17, u, "orders.ceu1.e3.s17." + u},
		{"orders", "  ", 0, 0, u, "orders.e0.s0." + u},
		{"orders", "\t\n", 0, 0, u, "orders.e0.s0." + u},
		{"orders", "\u2003", 0, 0, u, "orders.e0.s0." + u},
		// Java's isBlank does not count a no-break space: it is a cell.
		{"orders", "\u00a0", 0, 0, u, "orders.c\u00a0.e0.s0." + u},
		{"orders", "", 1, 2, "a.b.c", "orders.e1.s2.a.b.c"},
		{"注文", "東京", 1, 2, u, "注文.c東京.e1.s2." + u},
	} {
		got, err := Format(tc.ns, tc.cell, tc.epoch, tc.shard, tc.ulid)
		if err != nil || got != tc.want {
			t.Errorf("Format(%q, %q, %d, %d, %q) = %q, %v; want %q", tc.ns, tc.cell, tc.epoch, tc.shard, tc.ulid, got, err, tc.want)
		}
	}
}

func TestFormatErrors(t *testing.T) {
	for _, tc := range []struct {
		ns, cell     string
		epoch, shard int64
		ulid, want   string
	}{
		{"", "", 0, 0, u, `namespace must be non-empty and contain no '.': ""`},
		{"a.b", "", 0, 0, u, `namespace must be non-empty and contain no '.': "a.b"`},
		{"a.b", "x.y", 0, 0, u, `namespace must be non-empty and contain no '.': "a.b"`},
		{"orders", "x.y", 0, 0, u, `cell id must be non-empty and contain no '.': "x.y"`},
		{"orders", ".", 0, 0, u, `cell id must be non-empty and contain no '.': "."`},
		{"orders", "", -1, 0, u, "epoch and shard must not be negative (epoch -1, shard 0)"},
		{"orders", "", 0, -2, u, "epoch and shard must not be negative (epoch 0, shard -2)"},
		{"orders", "", 0, 0, "", `the ulid (the rest of the id) must be non-empty and on one line: ""`},
		{"orders", "", 0, 0, "a\nb", `the ulid (the rest of the id) must be non-empty and on one line: "a\nb"`},
	} {
		got, err := Format(tc.ns, tc.cell, tc.epoch, tc.shard, tc.ulid)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Format(%q, %q, %d, %d, %q) = %q, %v; want error %s", tc.ns, tc.cell, tc.epoch, tc.shard, tc.ulid, got, err, tc.want)
		}
	}
}

// TestFormatMaxLength: the cap counts UTF-16 code units, as Java's
// String.length does, not bytes or runes.
func TestFormatMaxLength(t *testing.T) {
	// ".e1.s2." and a ulid are 33 units: a 95-unit namespace makes 128.
	ok := []string{
		strings.Repeat("n", 95),
		strings.Repeat("é", 95), // 2 bytes, 1 unit each: 223 bytes, 128 units
	}
	for _, ns := range ok {
		id, err := Format(ns, "", 1, 2, u)
		if err != nil {
			t.Errorf("Format with a %d-byte namespace: %v", len(ns), err)
		} else if Parse(id).Legacy {
			t.Errorf("Parse(%q) is legacy", id)
		}
	}
	for _, tc := range []struct {
		ns, cell string
		units    int
	}{
		{strings.Repeat("n", 96), "", 129},
		{strings.Repeat("😀", 48), "", 129}, // 48 runes, 96 units
		{"orders", strings.Repeat("c", 100), 141},
	} {
		_, err := Format(tc.ns, tc.cell, 1, 2, u)
		id := tc.ns + ".e1.s2." + u
		if tc.cell != "" {
			id = tc.ns + ".c" + tc.cell + ".e1.s2." + u
		}
		want := "id would be " + strconv.Itoa(tc.units) + " characters, over the 128 an id may have: " + strconv.Quote(id) + "; shorten the namespace or the cell id"
		if err == nil || err.Error() != want {
			t.Errorf("Format(%q, %q):\n got %v\nwant %s", tc.ns, tc.cell, err, want)
		}
	}
}

var (
	segmentRunes = []rune("abcez019_-é日😀 \t\n\u00a0")
	restRunes    = []rune("abcesz019.é日😀 \t")
)

// TestFormatParseRoundTrip: whatever Format accepts, Parse reads back
// field for field.
func TestFormatParseRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ns := rapid.StringOfN(rapid.RuneFrom(segmentRunes), 1, 20, -1).Draw(t, "namespace")
		cell := rapid.StringOfN(rapid.RuneFrom(segmentRunes), 0, 20, -1).Draw(t, "cell")
		epoch := rapid.Int64Min(0).Draw(t, "epoch")
		shard := rapid.Int64Min(0).Draw(t, "shard")
		rest := rapid.StringOfN(rapid.RuneFrom(restRunes), 1, 40, -1).Draw(t, "rest")
		id, err := Format(ns, cell, epoch, shard, rest)
		if err != nil {
			if strings.HasPrefix(err.Error(), "id would be ") {
				t.Skip("over MaxLength")
			}
			t.Fatalf("Format: %v", err)
		}
		if isBlank(cell) {
			cell = ""
		}
		want := ID{Raw: id, Namespace: ns, Cell: cell, Epoch: epoch, Shard: shard, ULID: rest}
		if got := Parse(id); got != want {
			t.Fatalf("Parse(Format(...)) = %+v, want %+v", got, want)
		}
	})
}

// javaPattern is the reference's regex in RE2 syntax: '.' excludes Java's
// line terminators, \d is ASCII, and matches() anchors at both ends. RE2
// prefers the optional cell group as Java's greedy '?' does.
var javaPattern = regexp.MustCompile(`\A([^.]+)(?:\.c([^.]+))?\.e([0-9]+)\.s([0-9]+)\.([^\n\r\x{85}\x{2028}\x{2029}]+)\z`)

// referenceParse is the Java parse: regex, then Long.parseLong, legacy on
// any failure.
func referenceParse(s string) ID {
	m := javaPattern.FindStringSubmatch(s)
	if m == nil {
		return ID{Raw: s, Legacy: true}
	}
	epoch, err1 := strconv.ParseInt(m[3], 10, 64)
	shard, err2 := strconv.ParseInt(m[4], 10, 64)
	if err1 != nil || err2 != nil {
		return ID{Raw: s, Legacy: true}
	}
	return ID{Raw: s, Namespace: m[1], Cell: m[2], Epoch: epoch, Shard: shard, ULID: m[5]}
}

// genIDLike draws strings shaped like ids: each part is right most of the
// time and sometimes wrong in a way the grammar cares about, so valid and
// legacy ids both come up often.
func genIDLike(t *rapid.T) string {
	// part draws good, or one of bad one time in eight.
	part := func(name string, good *rapid.Generator[string], bad ...string) string {
		if rapid.IntRange(0, 7).Draw(t, name+" wrong") == 0 {
			return rapid.SampledFrom(bad).Draw(t, name)
		}
		return good.Draw(t, name)
	}
	segment := rapid.StringOfN(rapid.RuneFrom([]rune("nsxceé日😀 \n")), 1, 3, -1)
	digits := rapid.OneOf(
		rapid.StringOfN(rapid.RuneFrom([]rune("0123456789")), 1, 3, -1),
		rapid.SampledFrom([]string{"0", "007", "9223372036854775807"}),
	)
	badDigits := []string{"", "9223372036854775808", "99999999999999999999", "１", "-1", "+1", "x"}
	var b strings.Builder
	b.WriteString(part("namespace", segment, "", "a.b", "."))
	if rapid.Bool().Draw(t, "has cell") {
		b.WriteString(part("c", rapid.Just(".c"), "c", ".", ".C"))
		b.WriteString(part("cell", segment, "", "a.b", "e1.s2"))
	}
	b.WriteString(part("e", rapid.Just(".e"), "e", ".E", ".s", "."))
	b.WriteString(part("epoch", digits, badDigits...))
	b.WriteString(part("s", rapid.Just(".s"), "s", ".e", "."))
	b.WriteString(part("shard", digits, badDigits...))
	b.WriteString(part("dot", rapid.Just("."), "", ".."))
	rest := rapid.StringOfN(rapid.RuneFrom([]rune("xcés.😀\t ")), 1, 6, -1)
	b.WriteString(part("rest", rest, "", "x\n", "x\r", "\u0085", "a\u2028b", "\u2029", "x\r\n"))
	return b.String()
}

// TestParseMatchesReference compares Parse with the reference's regex.
func TestParseMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genIDLike(t)
		if got, want := Parse(s), referenceParse(s); got != want {
			t.Fatalf("Parse(%q) = %+v, reference %+v", s, got, want)
		}
	})
}

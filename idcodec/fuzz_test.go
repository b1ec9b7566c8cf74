package idcodec

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

// FuzzParse: Parse never panics and agrees with the reference's regex
// (referenceParse, in id_test.go) on every input. A legacy id comes back
// as nothing but itself. A self-routing id formats back with its own
// fields, when Format accepts them, to an id that parses to the same
// fields; that id is the input itself unless the input spelt a number with
// leading zeros (e007 reads as 7, Format writes e7) or carried a blank cell
// label (Format leaves a Java-blank cell out, so "ns.c .e1.s2.x" becomes
// "ns.e1.s2.x"). Format refuses only what Parse accepts but the reference
// could not store: ids over MaxLength UTF-16 units.
//
//	go test -run XXX -fuzz '^FuzzParse$' -fuzztime 60s ./idcodec/
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"orders.e3.s17." + u,
		"orders.ceu-1.e3.s17." + u,
		"ns.e0.s0.cfoo.bar",
		"ns.cfoo.e1.s2.x.y",
		"ns.ce1.e2.s3.x",
		"ns.e007.s0010.x",
		"ns.e9223372036854775807.s0.x",
		"ns.e9223372036854775808.s0.x",
		"ns.e1.s2..",
		"ns.e1.s2.x\ty",
		"n\ns.e1.s2.x",
		"注文.c東京.e1.s2.😀",
		"ns.c .e1.s2.x",
		"ns.c\u00a0.e1.s2.x",
		"ns.c.e1.s2.x",
		"ns.e0.s0.x\u2028",
		"ns.e１.s2.x",
		"wfi_abc",
		"",
		strings.Repeat("n", 100) + ".e1.s2." + u,
	} {
		f.Add(s)
	}
	// The inputs of the reference's hash vectors: ids of every shape,
	// legacy ids and odd Unicode.
	file, err := os.Open("testdata/hash_vectors.txt")
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	n := 0
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			if cols := strings.SplitN(line, "\t", 8); len(cols) == 8 {
				f.Add(cols[7])
				n++
			}
		}
	}
	if err := sc.Err(); err != nil || n == 0 {
		f.Fatalf("reading hash vectors: %v (%d inputs)", err, n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := Parse(s)
		if want := referenceParse(s); id != want {
			t.Fatalf("Parse(%q) = %+v, the reference %+v", s, id, want)
		}
		if id.Raw != s || id.String() != s || IsLegacy(s) != id.Legacy {
			t.Fatalf("Parse(%q) = %+v: Raw, String or IsLegacy disagree", s, id)
		}
		if id.Legacy {
			if id != (ID{Raw: s, Legacy: true}) {
				t.Fatalf("legacy Parse(%q) = %+v carries fields", s, id)
			}
			return
		}
		out, err := Format(id.Namespace, id.Cell, id.Epoch, id.Shard, id.ULID)
		if err != nil {
			if len(utf16.Encode([]rune(s))) <= MaxLength {
				t.Fatalf("Format refuses the fields of %q (%+v): %v", s, id, err)
			}
			return
		}
		back := Parse(out)
		want := id
		want.Raw = out
		if isBlank(id.Cell) {
			want.Cell = ""
		}
		if back != want {
			t.Fatalf("Parse(Format(fields of %q)) = %+v, want %+v", s, back, want)
		}
		if out != s && !leadingZero(s, id) && !isBlank(id.Cell) {
			t.Fatalf("Format(fields of %q) = %q", s, out)
		}
	})
}

// leadingZero reports whether the self-routing id s spelt its epoch or
// shard with a leading zero.
func leadingZero(s string, id ID) bool {
	rest := s[len(id.Namespace)+1:]
	if id.Cell != "" {
		rest = rest[len("c"+id.Cell)+1:]
	}
	for range 2 { // "e{digits}." then "s{digits}."
		dot := strings.IndexByte(rest, '.')
		if digits := rest[1:dot]; len(digits) > 1 && digits[0] == '0' {
			return true
		}
		rest = rest[dot+1:]
	}
	return false
}

package ringfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// bigRing writes a valid ring file of about n lines: cellLines cell
// declarations (all standby but the first two) and retired epochs of a
// four-shard ring, two slot lines each, for the rest.
func bigRing(n, cellLines int) []byte {
	var b bytes.Buffer
	epochs := (n - cellLines) / 3
	fmt.Fprintf(&b, "fusee-ring 1\nnamespace orders\nshards 4\nrevision %d\ncurrent-epoch %d\n", epochs, epochs-1)
	for i := range cellLines {
		fmt.Fprintf(&b, "cell c%d fingerprint=fp%d\n", i, i)
	}
	for e := range epochs {
		status := "retired"
		if e == epochs-1 {
			status = "open"
		} else if e == epochs-2 {
			status = "draining"
		}
		fmt.Fprintf(&b, "epoch %d %s\n  0-1 c0\n  2-3 c1\n", e, status)
	}
	return b.Bytes()
}

// Parsing and validation are linear: 200k cell lines took about 100 s when
// the duplicate check walked every earlier cell. Here they must take well
// under the test timeout.
func TestParseAndValidateManyCells(t *testing.T) {
	data := bigRing(300_000, 200_000)
	p, err := Parse("big.ring", data)
	if err != nil {
		t.Fatal(err)
	}
	fs := Validate(p)
	if HasErrors(fs) {
		t.Fatalf("findings: %v", fs[0])
	}
	if got := len(fs); got != 200_000-2 {
		t.Errorf("%d findings, want a standby warning for each of %d cells", got, 200_000-2)
	}
}

func TestParseStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseContext(ctx, "big.ring", bigRing(100_000, 50_000)); !errors.Is(err, context.Canceled) {
		t.Fatalf("parse after cancel: %v", err)
	}
}

func TestParseRequiresAFinalNewline(t *testing.T) {
	text := "fusee-ring 1\nnamespace ns\nshards 4\nrevision 1\ncurrent-epoch 0\ncell a\nepoch 0 open\n  0-3 a"
	_, err := Parse("cut.ring", []byte(text))
	wantErrContains(t, err, "cut.ring:8: the last line does not end with a newline")
	if _, err := Parse("whole.ring", []byte(text+"\n")); err != nil {
		t.Fatal(err)
	}
	// A cut through a range that still parses is caught the same way.
	if _, err := Parse("cut.ring", []byte(strings.TrimSuffix(text, "3 a")+"1 a")); err == nil {
		t.Fatal("a file cut mid-line was accepted")
	}
}

// BenchmarkParseValidate1MLines parses and validates a million-line file:
// mostly cell lines, and mostly epoch lines.
func BenchmarkParseValidate1MLines(b *testing.B) {
	for _, tc := range []struct {
		name  string
		cells int
	}{{"cells", 900_000}, {"epochs", 1000}} {
		data := bigRing(1_000_000, tc.cells)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				p, err := Parse("big.ring", data)
				if err != nil {
					b.Fatal(err)
				}
				if HasErrors(Validate(p)) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

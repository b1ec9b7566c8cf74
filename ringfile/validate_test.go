package ringfile

import (
	"slices"
	"strings"
	"testing"
)

// brokenRing has one of every semantic problem; Parse accepts it and
// Validate must report them all.
const brokenRing = `fusee-ring 1
namespace orders
shards 8
revision 3
current-epoch 1
cell a fingerprint=db-1
cell a fingerprint=db-2
cell b
cell idle
epoch 0 open
  0-7 a
epoch 1 open
  0-2 a
  2-4 b
  6-9 ghost
`

func TestValidateReportsEveryProblem(t *testing.T) {
	p := mustParse(t, brokenRing)
	fs := Validate(p)
	want := []string{
		"test.ring:7: error: cell a is declared with two fingerprints, db-1 (line 6) and db-2 (line 7): two databases would be conflated",
		"test.ring:10: error: epoch 0 is open but the current epoch is 1",
		"test.ring:15: error: epoch 1: cell ghost is not declared",
		"test.ring:15: error: epoch 1: shards 8-9 are outside its shard set 0-7",
		"test.ring:12: error: epoch 1: shard 5 is placed on no cell",
		"test.ring:14: error: epoch 1: shard 2 is placed more than once (a on line 13, b on line 14)",
		"test.ring:9: warning: cell idle owns no shard in the current epoch 1: standby",
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing finding %q in:\n%s", w, all)
		}
	}
	if len(fs) != len(want) {
		t.Errorf("got %d findings, want %d:\n%s", len(fs), len(want), all)
	}
	if err := Check(p); err == nil || !strings.Contains(err.Error(), "6 problems") {
		t.Errorf("Check: %v", err)
	}
}

func TestValidateFingerprintRules(t *testing.T) {
	base := "fusee-ring 1\nnamespace ns\nshards 2\nrevision 1\ncurrent-epoch 0\n%sepoch 0 open\n  0-1 a\n"
	cases := []struct {
		name, cells string
		ok          bool
	}{
		{"replicas share a fingerprint", "cell a fingerprint=db-1\ncell a\n", true},
		{"no fingerprint skips the check", "cell a\n", true},
		{"two fingerprints conflict", "cell a fingerprint=db-1\ncell a fingerprint=db-2\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustParse(t, strings.Replace(base, "%s", c.cells, 1))
			if err := Check(p); (err == nil) != c.ok {
				t.Errorf("Check = %v, want ok=%v", err, c.ok)
			}
		})
	}
	// Declaring a conflicting fingerprint with a new epoch is refused too.
	p := mustParse(t, strings.Replace(base, "%s", "cell a fingerprint=db-1\ncell b\n", 1))
	ring := EvenRing(2, []string{"b", "a"})
	if _, err := OpenEpoch(p, ring, ShardChange{}, CellDecl{ID: "a", Fingerprint: "db-9"}); err == nil {
		t.Error("OpenEpoch accepted a second fingerprint for cell a")
	}
	if next, err := OpenEpoch(p, ring, ShardChange{}, CellDecl{ID: "a", Fingerprint: "db-1"}); err != nil || len(next.Cells) != 2 {
		t.Errorf("a replica declaration: %v, %d cells", err, len(next.Cells))
	}
}

func TestValidateEpochRules(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"current not open", "current-epoch 0\ncell a\nepoch 0 draining\n  0-1 a\n", "current epoch 0 is draining: the current epoch must be open"},
		{"current missing", "current-epoch 3\ncell a\nepoch 0 open\n  0-1 a\n", "current epoch 3 does not exist"},
		{"newer than current", "current-epoch 0\ncell a\nepoch 0 open\n  0-1 a\nepoch 1 draining\n  0-1 a\n", "epoch 1 is newer than the current epoch 0"},
		{"empty ring", "current-epoch 0\ncell a\nepoch 0 open\n", "epoch 0 has an empty ring"},
		{"no current with epochs", "current-epoch none\ncell a\nepoch 0 open\n  0-1 a\n", "has epochs but no current epoch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustParse(t, "fusee-ring 1\nnamespace ns\nshards 2\nrevision 1\n"+c.text)
			if err := Check(p); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check = %v, want %q", err, c.want)
			}
		})
	}
}

func TestValidateNoEpochIsOnlyAWarning(t *testing.T) {
	p := mustParse(t, "fusee-ring 1\nnamespace ns\nshards 2\nrevision 0\ncurrent-epoch none\n")
	fs := Validate(p)
	if HasErrors(fs) || len(fs) != 1 || !strings.Contains(fs[0].Msg, "not ready") {
		t.Errorf("findings: %v", fs)
	}
}

// A refused line does not stop the parse: every syntax error is reported,
// and Validate still reports what the rest of the file says.
func TestParseReportsEverySyntaxErrorAndValidateTheRest(t *testing.T) {
	text := "fusee-ring 1\nnamespace orders\nshards 4\nrevision 1\ncurrent-epoch 1\nbogus 1\nnamespace again\ncell a fingerprint=x\ncell a fingerprint=y\nepoch 0 open\n  0-3 a\nepoch 1 open\n  0-3 a\n"
	p, err := Parse("f", []byte(text))
	wantErrContains(t, err, `f:6: unknown key "bogus"`, "f:7: duplicate namespace")
	var msgs []string
	for _, f := range Validate(p) {
		msgs = append(msgs, f.String())
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"f:9: error: cell a is declared with two fingerprints", "f:10: error: epoch 0 is open but the current epoch is 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
}

// Format 2: each epoch is checked against its own shard set, declared on
// its epoch line; sets may differ from epoch to epoch.
func TestValidateChecksEachEpochAgainstItsOwnSet(t *testing.T) {
	head := "fusee-ring 2\nnamespace ns\nrevision 2\ncurrent-epoch 1\ncell a\ncell b\n"
	ok := mustParse(t, head+"epoch 0 draining shards=0-3\n  0-3 a\nepoch 1 open shards=0-1,8-9\n  0-1 a\n  8-9 b\n")
	if err := Check(ok); err != nil {
		t.Fatalf("sets that differ per epoch: %v", err)
	}
	if !slices.Equal(ok.Epoch(1).Shards, []int{0, 1, 8, 9}) {
		t.Errorf("epoch 1's set: %v", ok.Epoch(1).Shards)
	}
	cases := []struct{ name, epochs, want string }{
		{"a shard of the set left out", "epoch 0 draining shards=0-3\n  0-3 a\nepoch 1 open shards=0-1,8-9\n  0-1 a\n  8 b\n", "test.ring:9: error: epoch 1: shard 9 is placed on no cell"},
		{"a shard outside the set", "epoch 0 draining shards=0-3\n  0-3 a\nepoch 1 open shards=0-1\n  0-1 a\n  2 b\n", "test.ring:11: error: epoch 1: shard 2 is outside its shard set 0-1"},
		{"a set beyond MaxShards", "epoch 0 draining shards=0-3\n  0-3 a\nepoch 1 open shards=0,1024\n  0 a\n  1024 b\n", "epoch 1: its shard set names shard 1024, outside 0..1023"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustParse(t, head+c.epochs)
			var msgs []string
			for _, f := range Validate(p) {
				msgs = append(msgs, f.String())
			}
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, c.want) }) {
				t.Errorf("findings %q, want %q", msgs, c.want)
			}
		})
	}
}

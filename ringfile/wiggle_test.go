package ringfile

import (
	"bytes"
	"strings"
	"testing"
)

const (
	goldenWiggle     = "../testdata/ring/payments.wiggle.json"
	goldenWiggleRing = "../testdata/ring/payments.ring"
)

func importPayments(t *testing.T, data []byte) *Policy {
	t.Helper()
	p, err := ImportWiggle(data, ImportOptions{File: "in.json", Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGoldenWiggleJSONRoundTrips(t *testing.T) {
	js, ring := readFile(t, goldenWiggle), readFile(t, goldenWiggleRing)
	p := importPayments(t, js)
	if fs := Validate(p); len(fs) != 0 {
		t.Fatalf("imported policy has findings: %v", fs)
	}
	if got := Format(p); !bytes.Equal(got, ring) {
		t.Errorf("import differs from %s:\n%s", goldenWiggleRing, got)
	}
	back := mustParse(t, string(ring))
	if got := ExportWiggle(back, false); !bytes.Equal(got, js) {
		t.Errorf("export differs from %s:\n%s", goldenWiggle, got)
	}
}

func TestImportAcceptsAllThreeShapes(t *testing.T) {
	js := readFile(t, goldenWiggle)
	want := string(Format(importPayments(t, js)))
	epochs := ExportWiggle(mustParse(t, string(readFile(t, goldenWiggleRing))), true)
	plain := `{"currentEpoch": 2, "revision": 9, "epochs": ` + string(epochs) + `}`
	if got := string(Format(importPayments(t, []byte(plain)))); got != want {
		t.Errorf("epochs as an object:\n%s", got)
	}
	// The bare epochs object has no revision: it imports at revision 0,
	// current epoch the open one.
	bare := importPayments(t, epochs)
	if bare.Current != 2 || bare.Revision != 0 {
		t.Errorf("bare epochs: current %d revision %d", bare.Current, bare.Revision)
	}
	empty := importPayments(t, []byte(`{"currentEpoch":0,"revision":1,"epochs":"{}"}`))
	if empty.Current != NoEpoch || len(empty.Epochs) != 0 {
		t.Errorf("empty epochs: %+v", empty)
	}
}

func TestImportIsStrict(t *testing.T) {
	cases := map[string]string{
		`{"currentEpoch":0,"revision":1,"epochs":"{}","extra":1}`:              `unknown key "extra"`,
		`{"currentEpoch":0,"revision":1,"revision":2,"epochs":"{}"}`:           `duplicate key "revision"`,
		`{"currentEpoch":0,"epochs":"{}"}`:                                     `missing key "revision"`,
		`{"currentEpoch":1.5,"revision":1,"epochs":"{}"}`:                      `currentEpoch: 1.5 is not a non-negative integer`,
		`{"0":{"status":"OPEN","ring":[]},"0":{"status":"OPEN","ring":[]}}`:    `duplicate key "0"`,
		`{"0":{"status":"open","ring":[]}}`:                                    `status "open"`,
		`{"0":{"status":"OPEN","ring":[{"shard":0,"cellId":"a","zone":"x"}]}}`: `epoch 0: ring slot 0: unknown key "zone"`,
		`{"0":{"status":"OPEN","ring":[{"cellId":"a"}]}}`:                      `needs shard and cellId`,
		`{"01":{"status":"OPEN","ring":[]}}`:                                   `key "01" is not an epoch number`,
		`{"currentEpoch":0,"revision":1,"epochs":"{}"} {}`:                     `trailing data`,
		`[1]`: `want a JSON object`,
	}
	for in, want := range cases {
		_, err := ImportWiggle([]byte(in), ImportOptions{File: "in.json", Namespace: "ns"})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "in.json: ") {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestImportKeepsProblemsForValidate(t *testing.T) {
	// The reference validates nothing: a doubled shard imports, and
	// Validate names it (a ring's set is what it names, so a hole cannot
	// be told from a smaller set).
	in := `{"currentEpoch":0,"revision":3,"epochs":{"0":{"status":"OPEN","ring":[{"shard":0,"cellId":"a","region":null},{"shard":0,"cellId":"b"}]}}}`
	p, err := ImportWiggle([]byte(in), ImportOptions{Namespace: "ns", Cells: []CellDecl{{ID: "a", Fingerprint: "db-a"}}})
	if err != nil {
		t.Fatal(err)
	}
	err = Check(p)
	wantErrContains(t, err, "1 problem")
	if p.Cells[0] != (CellDecl{ID: "a", Fingerprint: "db-a"}) || len(p.Cells) != 2 {
		t.Errorf("cells %+v", p.Cells)
	}
}

func TestExportEscapesLikeTheReference(t *testing.T) {
	var b bytes.Buffer
	writeJavaString(&b, "a\"b\\c\n<&>\x01é")
	if got := b.String(); got != `"a\"b\\c\n<&>\u0001é"` {
		t.Errorf("got %s", got)
	}
}

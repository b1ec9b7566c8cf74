package ringfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goldenRing = "../testdata/ring/orders.ring"

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t *testing.T, text string) *Policy {
	t.Helper()
	p, err := Parse("test.ring", []byte(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

// newPolicy is a valid policy with epoch 0 spread evenly over cells.
func newPolicy(t *testing.T, ns string, shards int, cells ...string) *Policy {
	t.Helper()
	p := &Policy{Namespace: ns, Current: NoEpoch}
	p, err := OpenEpoch(p, EvenRing(shards, cells), ShardChange{})
	if err != nil {
		t.Fatalf("genesis: %v", err)
	}
	return p
}

// createRing writes p to a new file in a temporary directory.
func createRing(t *testing.T, p *Policy) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orders.ring")
	if err := Create(path, p, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantErrContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", parts)
	}
	for _, s := range parts {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

// Package txtarfiles gives tests the files that the command tests' txtar
// archives hold, as fuzz seeds and examples. It is for tests only: it
// reads testdata and fails the test that calls it, and must never be
// imported by code that ships.
package txtarfiles

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// Files returns the content of every file in the txtar archives of dir
// whose name ends with suffix: the example files of the command tests.
func Files(tb testing.TB, dir, suffix string) [][]byte {
	tb.Helper()
	archives, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, suffix) {
				out = append(out, f.Data)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no %s files in the archives of %s", suffix, dir)
	}
	return out
}

package meta

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fusee-dev/fusee/internal/txtarfiles"
)

// FuzzParse feeds arbitrary bytes to Parse, which reads fusee.meta from
// disk. Parse must never panic; an error must be a *FileError naming the
// path. When Parse accepts the bytes, what it returns must be a Meta that
// Marshal accepts, the canonical bytes must parse back to the same Meta,
// and they must be a fixed point: marshalling the re-parsed Meta gives the
// same bytes again.
//
//	go test -run XXX -fuzz '^FuzzParse$' -fuzztime 60s ./meta/
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"format=local\nlog=3\nshards=8\n",
		"format=local\nlog=2\nshards=1\n",
		"format=local\nlog=3\nshards=1024\n",
		"shards=4\nlog=3\nformat=local\n",
		"# header\n\nformat=local\n#log=2\nlog=3\n\n# trailing = not a key\nshards=16\n\n",
		"format=reshard\nlog=3\nshards=16\nold_shards=8\nnew_shards=16\n",
		header + "format=local\nlog=3\nshards=8\n",
		header + "format=reshard\nlog=3\nshards=16\nold_shards=8\nnew_shards=16\n",
		// Refusals: each a different rule.
		"",
		"format=local\nlog=3\nshards=1",
		"format=local\r\nlog=3\r\nshards=8\r\n",
		"format=local\nlog 3\nshards=8\n",
		"format=local\nlog=3\nshards = 8\n",
		"FORMAT=local\nlog=3\nshards=8\n",
		"format=local\nlog=3\nshards=08\n",
		"format=local\nlog=3\nshards=2000\n",
		"format=local\nlog=3\nshards=99999999999999999999\n",
		"format=local\nlog=4\nshards=8\n",
		"format=remote\nlog=3\nshards=8\n",
		"format=local\nlog=3\nshards=8\nshards=8\n",
		"format=local\nlog=3\nshards=8\nnew_shards=8\n",
		"format=reshard\nlog=3\nshards=8\nold_shards=4\nnew_shards=16\n",
		"format=reshard\nlog=3\nshards=8\nnew_shards=8\n",
		"format=local\nlog=3\n",
		"format=local\nlog=3\nshards=8\ncolour=blue\n",
	} {
		f.Add([]byte(s))
	}
	for _, data := range txtarfiles.Files(f, "../cmd/internal/cli/testdata/script", ".meta") {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/fuzz/fusee.meta"
		m, err := Parse(path, data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path {
				t.Fatalf("Parse error %v (%T) is not a *FileError for %s", err, err, path)
			}
			if m != (Meta{}) {
				t.Fatalf("Parse failed (%v) but returned %+v", err, m)
			}
			return
		}
		canon, err := m.Marshal()
		if err != nil {
			t.Fatalf("Parse accepted %q as %+v, which Marshal refuses: %v", data, m, err)
		}
		again, err := Parse(path, canon)
		if err != nil {
			t.Fatalf("Parse(Marshal(%+v)) = %v\n%s", m, err, canon)
		}
		if again != m {
			t.Fatalf("round trip changed the meta: %+v, then %+v", m, again)
		}
		twice, err := again.Marshal()
		if err != nil || !bytes.Equal(twice, canon) {
			t.Fatalf("Marshal is not a fixed point (%v):\n%q\n%q", err, canon, twice)
		}
	})
}

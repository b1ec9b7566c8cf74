package store

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// TestNewStoreStartsAtItsFormat: every way fusee creates a store (the
// engine's OpenStore, WriteShardStore, reshard's StoreWriter, a scratch
// store) creates it at storeFormat directly: its directory holds one
// format marker, the first pebble ever wrote there (iteration 1), naming
// storeFormat, and pebble reads the store as of that version. A store
// pebble ratcheted up from its oldest version has its marker at a later
// iteration (and, were pebble to stop finding the marker presetFormat
// writes, a second one).
func TestNewStoreStartsAtItsFormat(t *testing.T) {
	create := map[string]func(fs vfs.FS, dir string) error{
		"OpenStore": func(fs vfs.FS, dir string) error {
			db, err := OpenStore(fs, dir, nil, false, true)
			if err != nil {
				return err
			}
			return db.Close()
		},
		"WriteShardStore": func(fs vfs.FS, dir string) error {
			s := model.NewShard(0, 1)
			return WriteShardStore(fs, dir, s, model.CheckpointHeader{Gen: s.StoreGen})
		},
		"StoreWriter": func(fs vfs.FS, dir string) error {
			return writeTestStore(t, fs, dir, false)
		},
		"OpenScratchStore": func(fs vfs.FS, dir string) error {
			db, err := OpenScratchStore(fs, dir, 0, 0)
			if err != nil {
				return err
			}
			return db.Close()
		},
	}
	// pebble's own name for the marker, spelled out: were formatMarker
	// not it, pebble would not find the preset marker and would ratchet
	// beside it.
	want := "marker.format-version.000001." + storeFormat.String()
	for name, fn := range create {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			if err := fs.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := fn(fs, "/d/store"); err != nil {
				t.Fatal(err)
			}
			ls, err := fs.List("/d/store")
			if err != nil {
				t.Fatal(err)
			}
			var markers []string
			for _, f := range ls {
				if strings.HasPrefix(f, "marker.") && !strings.HasPrefix(f, "marker.manifest.") {
					markers = append(markers, f)
				}
			}
			if len(markers) != 1 || markers[0] != want {
				t.Errorf("format markers %q, want only %q: the store was not created at its format directly", markers, want)
			}
			desc, err := pebble.Peek("/d/store", fs)
			if err != nil {
				t.Fatal(err)
			}
			if !desc.Exists || desc.FormatMajorVersion != storeFormat {
				t.Errorf("pebble reads the store as existing=%v at format %d, want %d", desc.Exists, desc.FormatMajorVersion, storeFormat)
			}
		})
	}
}

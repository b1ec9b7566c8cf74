package journal

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// setStoreVersion rewrites shard's checkpoint header in place with
// layout version v.
func setStoreVersion(t *testing.T, fs vfs.FS, dir string, shard int, v uint64) {
	t.Helper()
	st, err := store.OpenStore(fs, store.StoreDir(fs, dir, shard), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	val, closer, err := st.Get(store.HeaderKey())
	if err != nil {
		t.Fatal(err)
	}
	h, err := model.DecodeHeader(val)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.Version = v
	if err := st.Set(store.HeaderKey(), model.EncodeHeader(nil, &h), pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// A store of another layout version is refused as a whole, with a
// *StoreVersionError that says what to do, not that the store is damaged.
// Version 2 was never released: only a development build wrote it.
func TestOpenRefusesOtherStoreVersions(t *testing.T) {
	for _, tc := range []struct {
		version uint64
		want    string
	}{
		{2, "written by a development build of fusee and must be regenerated"},
		{1, "written by a development build of fusee and must be regenerated"},
		{model.StoreVersion + 1, "written by a newer fusee"},
	} {
		fs := vfs.NewMem()
		db, err := Create(fs, "/data", CreateOptions{Shards: 2, Now: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		setStoreVersion(t, fs, "/data", 1, tc.version)
		for _, ro := range []bool{true, false} {
			db, _, err := Open(fs, "/data", OpenOptions{ReadOnly: ro})
			if err == nil {
				db.Close()
				t.Fatalf("version %d: Open(read-only %v) accepted the store", tc.version, ro)
			}
			var se *store.StoreError
			var ve *model.StoreVersionError
			if !errors.As(err, &se) || !errors.As(err, &ve) || ve.Version != tc.version {
				t.Fatalf("version %d: %v (%T), want a *StoreError wrapping a *StoreVersionError", tc.version, err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "damaged") {
				t.Errorf("version %d: message %q: want %q and no word of damage", tc.version, msg, tc.want)
			}
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shard store whose sstable fails its checksum is a clean error, never
// a panic: verify reports one unreadable finding and exits 1; inspect and
// dump print the error and exit 1.
func TestVerifyCorruptStoreTable(t *testing.T) {
	dir := makeDataDir(t, 2)
	store := filepath.Join(dir, "shards", "0000", "store")
	tables, err := filepath.Glob(filepath.Join(store, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no sstables in %s (%v)", store, err)
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+8; i++ {
		b[i] = 0
	}
	if err := os.WriteFile(tables[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{store, filepath.Base(tables[0]), "is corrupt", "restore the data directory from a backup"}
	out, errOut, code := runFusee(t, nil, "verify", dir)
	if code != 1 || !strings.HasPrefix(out, "directory: unreadable: ") || strings.Contains(errOut, "panic") {
		t.Fatalf("verify of a corrupt store: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("verify output does not name %q:\n%s", w, out)
		}
	}
	for _, cmd := range []string{"inspect", "dump"} {
		_, errOut, code := runFusee(t, nil, cmd, dir)
		if code != 1 || strings.Contains(errOut, "panic") {
			t.Errorf("%s of a corrupt store: code %d\n%s", cmd, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s error does not name %q:\n%s", cmd, w, errOut)
			}
		}
	}
}

// Ctrl-C (the root context cancelled) stops inspect, verify and dump with
// exit 130, not an unreadable finding.
func TestCheckCommandsCancelled(t *testing.T) {
	dir := makeDataDir(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, cmd := range []string{"inspect", "verify", "dump"} {
		var out, errb bytes.Buffer
		code := Run(ctx, "test", []string{cmd, dir}, strings.NewReader(""), &out, &errb, nil)
		if code != ExitCancelled || strings.Contains(out.String(), "unreadable") {
			t.Errorf("%s with a cancelled context: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", cmd, code, ExitCancelled, out.String(), errb.String())
		}
	}
}

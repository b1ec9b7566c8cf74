package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot is every entry under dir: its mode and, for files, a hash of
// its bytes.
func snapshot(t *testing.T, dir string) map[string]string { return snapshotTimes(t, dir, false) }

// snapshotTimes is snapshot, with each entry's size and modification time
// too when times is set.
func snapshotTimes(t *testing.T, dir string, times bool) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if times {
			v += fmt.Sprintf(" %d %s", info.Size(), info.ModTime().Format("15:04:05.000000000"))
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		}
		m[strings.TrimPrefix(path, dir)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s changed: %q -> %q", what, p, v, after[p])
		}
	}
	for p, v := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was created (%s)", what, p, v)
		}
	}
}

// A refused command changes no byte: on a directory that recovery refuses
// (a store missing, a store's file cut short, the log cut short or gone,
// fusee.meta disagreeing with the stores), sim drive, which writes, and
// inspect, verify and dump, which only read, fail and leave every file
// and directory as it was, creating none (no LOCK in a missing store's
// place, no compaction of the stores that are there).
func TestRefusedCommandsChangeNoByte(t *testing.T) {
	damages := map[string]func(t *testing.T, dir string){
		"store missing": func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "shards", "0001"))
		},
		"last store missing": func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "shards", "0002", "store"))
		},
		"sstable cut short": func(t *testing.T, dir string) {
			os.Truncate(mustGlob(t, filepath.Join(dir, "shards", "0001", "store", "*.sst")), 100)
		},
		"log cut short": func(t *testing.T, dir string) {
			os.Truncate(mustGlob(t, filepath.Join(dir, "wal", "*.log")), 1000)
		},
		"log missing": func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "wal"))
		},
		"meta says fewer shards": func(t *testing.T, dir string) {
			setMetaShards(t, dir, 2)
		},
		"meta says more shards": func(t *testing.T, dir string) {
			setMetaShards(t, dir, 4)
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := genDir(t)
			damage(t, dir)
			before := snapshot(t, dir)
			for _, args := range [][]string{{"sim", "drive", dir}, {"inspect", dir}, {"verify", dir}, {"dump", dir, "--logical"}} {
				_, errOut, code := runFusee(t, nil, args...)
				if code == 0 {
					t.Errorf("fusee %s succeeded on a damaged directory", strings.Join(args, " "))
				}
				_ = errOut
				sameSnapshot(t, "fusee "+strings.Join(args, " "), before, snapshot(t, dir))
			}
		})
	}
}

// setMetaShards rewrites fusee.meta's shards= line.
func setMetaShards(t *testing.T, dir string, n int) {
	t.Helper()
	path := filepath.Join(dir, "fusee.meta")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "shards=") {
			lines[i] = "shards=" + string(rune('0'+n))
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// inspect, verify and dump work for a user who can read the directory but
// not write it: the directory lock and every store's pebble lock are taken
// on read-only descriptors, and nothing is created or changed. As root the
// commands run as nobody (65534); as anyone else, on a directory made
// read-only with chmod.
func TestReadOnlyCommandsNeedNoWriteAccess(t *testing.T) {
	base := t.TempDir()
	for p := base; p != filepath.Clean(os.TempDir()) && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the test's own temporary directories, made 0700
	}
	dir := filepath.Join(base, "data")
	if _, errOut, code := runFusee(t, nil, "gen", dir, "--shards", "3", "--runs", "60", "--seed", "5"); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	bin := os.Args[0]
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// nobody must be able to reach the test binary and the directory.
		for p := base; p != "/"; p = filepath.Dir(p) {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm()&0o005 != 0o005 {
				t.Skipf("%s is not readable by other users; cannot test as nobody", p)
			}
		}
		bin = filepath.Join(base, "fusee")
		copyFile(t, os.Args[0], bin)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			mode := os.FileMode(0o444)
			if fi.IsDir() {
				mode = 0o555
			}
			os.Chmod(p, mode)
		}
		return nil
	})
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	before := snapshot(t, dir)
	for _, args := range [][]string{{"verify", dir}, {"inspect", dir}, {"dump", dir, "--logical"}, {"verify", "--json", dir}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "FUSEE_TEST_AS_FUSEE=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("fusee %s without write access: %v\n%s", strings.Join(args, " "), err, out)
		}
		sameSnapshot(t, "fusee "+strings.Join(args, " "), before, snapshot(t, dir))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

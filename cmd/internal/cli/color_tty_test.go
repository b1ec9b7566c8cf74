package cli

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal: the controller and the terminal side.
func openPty(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close(); ctl.Close() })
	return ctl, tty
}

// Tables on stdout are coloured on a terminal, as stderr is, through Main's
// pipeWatcher (issue 28 item 14: ring show, ring plan and inspect printed
// no escape on a terminal with TERM=xterm-256color); NO_COLOR turns it off,
// and CLICOLOR_FORCE turns it on for a pipe.
func TestStdoutColouredOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		tty     bool
		escapes bool
	}{
		{"terminal", []string{"TERM=xterm-256color"}, true, true},
		{"terminal, NO_COLOR", []string{"TERM=xterm-256color", "NO_COLOR=1"}, true, false},
		{"pipe", []string{"TERM=xterm-256color"}, false, false},
		{"pipe, CLICOLOR_FORCE", []string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.tty {
				ctl, tty := openPty(t)
				ios := newIO(nil, &pipeWatcher{f: tty, closed: func() {}}, &bytes.Buffer{}, tc.env)
				if !ios.OutTTY {
					t.Fatal("the terminal is not seen as one")
				}
				if err := ios.printTable([]string{"what", "count"}, [][]string{{"runs", "3"}}); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 4096)
				ctl.SetReadDeadline(time.Now().Add(2 * time.Second))
				n, _ := ctl.Read(buf)
				got = string(buf[:n])
			} else {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				ios := newIO(nil, &pipeWatcher{f: w, closed: func() {}}, &bytes.Buffer{}, tc.env)
				ios.Out.Write([]byte(styleHeader.Render("WHAT") + "\n"))
				w.Close()
				buf := make([]byte, 4096)
				n, _ := r.Read(buf)
				got = string(buf[:n])
			}
			if has := strings.Contains(got, "\x1b["); has != tc.escapes {
				t.Errorf("escapes present = %v, want %v: %q", has, tc.escapes, got)
			}
			if !strings.Contains(got, "WHAT") {
				t.Errorf("the header is missing: %q", got)
			}
		})
	}
}

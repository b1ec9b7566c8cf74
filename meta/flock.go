package meta

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// FileLock is a held exclusive flock(2) on an open file. It is fusee's one
// lock: a data directory's LOCK file and every pebble store's LOCK are
// taken with it (through FS), and so is a ring file (package ringfile locks
// the ring file itself with it). The kernel drops it when the holder exits,
// however it exits, and it needs only a read-only descriptor.
type FileLock struct{ f *os.File }

// lockPoll is how often LockFile tries again while it waits.
const lockPoll = 10 * time.Millisecond

// LockFile takes an exclusive flock(2) on the open file f. With a zero
// deadline it does not wait: a lock held elsewhere (by another process, or
// by another open of the same file in this one) is an *os.PathError
// matching unix.EWOULDBLOCK. Otherwise it tries again every few
// milliseconds until deadline, calling waiting (if not nil) each time it
// finds the lock held, and then gives up with that same error; once ctx is
// done it gives up with ctx.Err(). On success the lock owns f: Close
// releases the lock and closes f. On an error f stays open, the caller's.
func LockFile(ctx context.Context, f *os.File, deadline time.Time, waiting func()) (*FileLock, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return &FileLock{f: f}, nil
		case err == unix.EINTR:
			continue
		case err != unix.EWOULDBLOCK:
			return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		if waiting != nil {
			waiting()
		}
		if deadline.IsZero() || !time.Now().Before(deadline) {
			return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(lockPoll, time.Until(deadline))):
		}
	}
}

// Close releases the lock and closes the file. Calling it again does
// nothing.
func (l *FileLock) Close() error {
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Closing the only descriptor of the open file releases the flock; the
	// explicit LOCK_UN makes the release not depend on that.
	uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
	cerr := f.Close()
	if uerr != nil {
		return fmt.Errorf("unlocking %s: %w", f.Name(), uerr)
	}
	return cerr
}

// LockHolder says who holds the flock on the open file f, from /proc/locks
// where the system has it: "pid 123 (fusee ring open-epoch orders.ring
// ...)", else "another process".
func LockHolder(f *os.File) string {
	const unknown = "another process"
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return unknown
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return unknown
	}
	dev := uint64(st.Dev) // uint64 on Linux, int32 on darwin (which has no /proc/locks)
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 4321 08:01:131090 0 EOF"; waiters
		// have "->" after the number.
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid := fields[4]
		if cmd, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && len(cmd) > 0 {
			args := strings.Join(strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " ")), " ")
			if len(args) > 80 {
				args = args[:77] + "..."
			}
			return fmt.Sprintf("pid %s (%s)", pid, args)
		}
		return "pid " + pid
	}
	return unknown
}

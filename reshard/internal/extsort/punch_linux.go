package extsort

import "golang.org/x/sys/unix"

// holePuncher cuts ranges out of a file, through a descriptor of its own
// opened for writing (f is open for reading only).
type holePuncher struct{ fd int }

// openPuncher is a puncher for the file at path, or nil when it cannot be
// opened for writing.
func openPuncher(path string) *holePuncher {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &holePuncher{fd: fd}
}

// punch cuts n bytes from off out of the file, its size kept; false when
// the file system refuses (no more cuts are tried).
func (h *holePuncher) punch(off, n int64) bool {
	if n <= 0 {
		return true
	}
	return unix.Fallocate(h.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n) == nil
}

func (h *holePuncher) close() { _ = unix.Close(h.fd) }

package ringfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/fusee-dev/fusee/meta"
)

// AnyRevision means a write carries no expectation about the revision.
const AnyRevision int64 = -1

// WriteOptions control one write of a ring file.
type WriteOptions struct {
	// ExpectRevision refuses the write (a *ConflictError) unless the file
	// is at this revision when the lock is held. AnyRevision skips it.
	ExpectRevision int64
	// ExpectedBy names what carried the expectation, for the message.
	ExpectedBy string
	// DryRun computes and checks the new policy but writes nothing.
	DryRun bool
	// LockWait bounds the wait for another writer; 10s when zero.
	LockWait time.Duration
	// Noun is what the policy is held in, for a conflict's message: "file"
	// when empty.
	Noun string
	// Stale, if set, is asked about a policy whose revision is not the
	// expected one, before the write is refused as a lost race: it may
	// return a more precise error (a plan that was applied already).
	Stale func(cur *Policy) error
	// OnWait, if set, is called once when the write has to wait for
	// another writer's lock, with who holds it ("pid 123 (fusee ring
	// open-epoch ...)" where the system tells, else "another process").
	OnWait func(holder string)
}

func (o WriteOptions) noun() string {
	if o.Noun == "" {
		return "file"
	}
	return o.Noun
}

// Load reads and parses a ring file. On a syntax error it returns what it
// could read along with every error; it does not validate.
func Load(path string) (*Policy, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load that stops when ctx is done.
func LoadContext(ctx context.Context, path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ring file: %w", err)
	}
	return ParseContext(ctx, path, data)
}

// LoadValid loads a ring file and refuses it (an *InvalidError) if
// Validate finds an error: commands must not act on an invalid policy.
func LoadValid(path string) (*Policy, error) {
	return LoadValidContext(context.Background(), path)
}

// LoadValidContext is LoadValid that stops when ctx is done.
func LoadValidContext(ctx context.Context, path string) (*Policy, error) {
	p, err := LoadContext(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := Check(p); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveLink follows the symbolic links path names, if any, to the file
// they end at (which may not exist yet). A write renames a new file over
// its target: done on the link it would replace the link with a copy, and
// the link's old target and the new file would then place the same ids on
// different cells. Locking the target, not the link, also makes two
// writers reaching one file by different names exclude each other.
// Directories on the way need no care: a rename through them lands in the
// real directory.
func resolveLink(path string) (string, error) {
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if hops == 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
}

// Create writes a new ring file, refusing to replace one that exists: the
// compare-and-set of a create, which expects no file (an expected revision
// other than 0 is a *ConflictError, as there is nothing at that revision).
func Create(path string, p *Policy, opt WriteOptions) error {
	return CreateContext(context.Background(), path, p, opt)
}

// CreateContext is Create that gives up, writing nothing, once ctx is done.
// A path that is a symbolic link creates the file it points at.
func CreateContext(ctx context.Context, path string, p *Policy, opt WriteOptions) error {
	if err := Check(p); err != nil {
		return err
	}
	if opt.ExpectRevision != AnyRevision && opt.ExpectRevision != 0 {
		return &ConflictError{File: path, Expected: opt.ExpectRevision, Missing: true, What: opt.ExpectedBy, Noun: opt.noun()}
	}
	target, err := resolveLink(path)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", path, err)
	}
	// A new file cannot be locked before it exists: createDurably's link(2)
	// is what makes one of two creators lose.
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("%s already exists: refusing to overwrite a ring file (%w)", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if opt.DryRun {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := createDurably(target, Format(p)); err != nil {
		return err
	}
	// The new file can be locked now: clear what a killed create left.
	return withLock(ctx, target, opt, func() error { removeStaleTemps(target); return nil })
}

// Update is the one read-modify-write of a ring file. Holding an exclusive
// lock on the ring file itself (see withLock), it re-reads the file, refuses an
// invalid one, checks the expected revision, asks change for the new
// policy, checks that it only moves history forward (CheckTransition) and
// is valid, then replaces the file atomically and durably. Two processes
// updating one file are serialised by the lock, so one of two writers that
// expected the same revision loses with a *ConflictError. A path that is a
// symbolic link is resolved once: the target is locked, read and replaced,
// and the link stays a link. A dry run takes no lock.
func Update(path string, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	return UpdateContext(context.Background(), path, opt, change)
}

// UpdateContext is Update that gives up, writing nothing, once ctx is done
// before the new file is renamed into place.
func UpdateContext(ctx context.Context, path string, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	target, err := resolveLink(path)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", path, err)
	}
	var next *Policy
	lock := withLock
	if opt.DryRun {
		lock = withoutLock // a dry run writes nothing: it needs no lock
	}
	err = lock(ctx, target, opt, func() error {
		if !opt.DryRun {
			removeStaleTemps(target)
		}
		cur, err := LoadValidContext(ctx, target)
		if err != nil {
			return err
		}
		cur.File = path
		if next, err = Apply(cur, path, opt, change); err != nil {
			return err
		}
		if opt.DryRun {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return writeDurably(target, Format(next))
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

// withLock runs fn holding an exclusive flock(2) on the ring file itself,
// taken with meta.LockFile, the lock data directories use too, so that a
// lock leaves nothing behind (no FILE.lock). A writer replaces the file by
// renaming a new one over it, so a waiter may get the lock on the file as
// it was: it then checks that path still names the file it locked and, if
// not, locks the new one. flock needs only a read-only descriptor. Waiting
// stops when ctx is done.
func withLock(ctx context.Context, path string, opt WriteOptions, fn func() error) error {
	wait := opt.LockWait
	if wait == 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading ring file: %w", err)
		}
		lock, err := meta.LockFile(ctx, f, deadline, func() {
			if !told && opt.OnWait != nil {
				opt.OnWait(meta.LockHolder(f))
			}
			told = true
		})
		switch {
		case ctx.Err() != nil && err == ctx.Err():
			f.Close()
			return err
		case errors.Is(err, unix.EWOULDBLOCK):
			holder := meta.LockHolder(f)
			f.Close()
			return &LockedError{File: path, Holder: holder, Waited: wait}
		case err != nil:
			f.Close()
			return fmt.Errorf("locking %s: %w", path, err)
		case !sameFile(f, path):
			lock.Close() // replaced while we waited: lock the new file
			continue
		}
		err = fn()
		if cerr := lock.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

func withoutLock(_ context.Context, _ string, _ WriteOptions, fn func() error) error { return fn() }

// sameFile reports whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// removeStaleTemps removes the temporary files a write of path that was
// killed (at write, fsync, link or rename) left beside it: the ones
// createDurably and meta.ReplaceFile name ".BASE.tmp…". The caller holds
// path's lock, so no live write of path owns one; a creator racing to
// make path loses anyway, path being there. Best effort: a file that
// cannot be removed is left for the next write.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// WriteFile writes data to path atomically and durably; used for plan
// files and exports, which are not compare-and-set.
func WriteFile(path string, data []byte) error {
	return writeDurably(path, data)
}

// createDurably writes a new file at path, failing if one exists: the
// data goes to a synced temporary file beside it, which is hard-linked to
// path (link(2) never replaces a file) and removed; then the directory is
// synced. Two creators of one file cannot both succeed, and a crash leaves
// either no file or the whole file, without needing a lock.
func createDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if _, serr := os.Stat(path); errors.Is(err, fs.ErrExist) || serr == nil {
			return fmt.Errorf("%s already exists: refusing to overwrite a ring file (%w)", path, fs.ErrExist)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return meta.SyncDir(vfs.Default, dir)
}

// writeDurably replaces path with data through meta.ReplaceFile, the one
// atomic replace fusee has: a synced temporary file beside path renamed
// over it, then the directory synced so the rename survives a crash.
func writeDurably(path string, data []byte) error {
	return meta.ReplaceFile(vfs.Default, path, data)
}

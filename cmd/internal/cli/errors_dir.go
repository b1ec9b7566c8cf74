package cli

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// dirProblem is a data directory that cannot be read, said in an
// operator's terms: what is wrong, naming the file, and what to do next.
// verify prints the two as an unreadable finding's detail and hint; the
// other commands print them as one error line.
type dirProblem struct {
	what string // what is wrong and where
	next string // the next step; "" when what already says it
	err  error  // the cause, for errors.Is and errors.As
	// outOf: the command ran out of something (open files, scratch
	// space), and the directory is not at fault: verify reports it as an
	// error, not as an unreadable directory.
	outOf bool
}

func (e *dirProblem) Error() string {
	if e.next == "" {
		return e.what
	}
	return e.what + "; " + e.next
}

func (e *dirProblem) Unwrap() error { return e.err }

const nextRestore = "restore the data directory from a backup"

// explainDirError turns an error from opening the data directory dir into
// a *dirProblem when it knows the case: a path that is no directory, a
// fusee.meta that disagrees with the stores, a missing store or log, a log
// cut short, a store file cut short or missing. Refusals (in use, an
// interrupted reshard, an old log), cancellation and unknown errors come
// back as they are. It only reads, and only after opening has failed.
func explainDirError(fs vfs.FS, dir string, err error) error {
	var dp *dirProblem
	switch {
	case err == nil, errors.As(err, &dp), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, meta.ErrInUse), errors.Is(err, meta.ErrSwitching), errors.Is(err, meta.ErrOldLog):
		return err
	}
	if p := explainResource(fs, dir, err); p != nil {
		return p
	}
	if p := explainPath(fs, dir, err); p != nil {
		return p
	}
	m, merr := meta.ReadAny(fs, dir)
	if errors.Is(merr, iofs.ErrNotExist) {
		what := fmt.Sprintf("%s is not a fusee data directory: it has no fusee.meta", dir)
		if names, _ := fs.List(dir); len(names) == 0 {
			what = fmt.Sprintf("%s is empty: it is not a fusee data directory", dir)
		}
		return &dirProblem{what: what, next: "give the engine's data directory, the one that holds fusee.meta", err: err}
	}
	if merr != nil {
		return &dirProblem{what: merr.Error(),
			next: "fusee.meta is written only by fusee: restore it from a backup, or check that this is the data directory", err: err}
	}
	if p := explainLayout(fs, dir, m.Shards, err); p != nil {
		return p
	}
	return explainCause(err)
}

// explainPath covers a path that is not a directory at all.
func explainPath(fs vfs.FS, dir string, err error) *dirProblem {
	fi, serr := fs.Stat(dir)
	switch {
	case errors.Is(serr, iofs.ErrNotExist):
		return &dirProblem{what: fmt.Sprintf("data directory %s does not exist", dir),
			next: "check the path: give the directory that holds fusee.meta", err: err}
	case serr == nil && !fi.IsDir():
		return &dirProblem{what: fmt.Sprintf("%s is a file, not a directory", dir),
			next: "give the data directory, the directory that holds fusee.meta", err: err}
	}
	return nil
}

// explainLayout compares fusee.meta's shard count with the shard stores
// and the log directory on disk.
func explainLayout(fs vfs.FS, dir string, shards int, err error) *dirProblem {
	if _, serr := fs.Stat(fs.PathJoin(dir, "wal")); errors.Is(serr, iofs.ErrNotExist) {
		return &dirProblem{what: fmt.Sprintf("the write-ahead log directory %s is missing: it holds every write since the last checkpoints",
			fs.PathJoin(dir, "wal")), next: nextRestore, err: err}
	}
	present := storesOnDisk(fs, dir)
	contiguous := len(present) > 0 && present[len(present)-1] == len(present)-1
	if k := len(present); contiguous && k != shards && k <= meta.MaxShards {
		// The stores agree among themselves on k shards: the likely
		// culprit is fusee.meta, not the stores.
		if _, herr := store.ReadHeader(fs, dir, 0, k); herr == nil {
			return &dirProblem{
				what: fmt.Sprintf("%s says shards=%d, but %s holds %d shard stores (%s to %s) whose checkpoints say %d shards",
					fs.PathJoin(dir, meta.FileName), shards, dir, k, shardDirName(0), shardDirName(k-1), k),
				next: fmt.Sprintf("fusee.meta is the likely culprit, edited or copied from another directory: restore it from a backup, or, if only its shards= line was changed, set shards=%d again", k),
				err:  err}
		}
	}
	var missing []string
	for i := range shards {
		if _, found := slices.BinarySearch(present, i); !found {
			missing = append(missing, store.StoreDir(fs, dir, i))
		}
	}
	if len(missing) > 0 {
		what := fmt.Sprintf("shard store %s is missing or empty", missing[0])
		if len(missing) > 1 {
			what = fmt.Sprintf("%d shard stores are missing or empty, %s the first", len(missing), missing[0])
		}
		return &dirProblem{what: fmt.Sprintf("%s: fusee.meta says %d shards, %s holds %d", what, shards, fs.PathJoin(dir, "shards"), len(present)),
			next: "the directory is incomplete, a store deleted or a copy stopped early: " + nextRestore, err: err}
	}
	return nil
}

// storesOnDisk lists, sorted, the shard numbers that have a store under
// dir/shards: a store directory with a pebble MANIFEST in it.
func storesOnDisk(fs vfs.FS, dir string) []int {
	names, err := fs.List(fs.PathJoin(dir, "shards"))
	if err != nil {
		return nil
	}
	var out []int
	for _, name := range names {
		n, err := strconv.Atoi(name)
		if err != nil || len(name) != 4 || n < 0 {
			continue
		}
		files, _ := fs.List(store.StoreDir(fs, dir, n))
		if slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "MANIFEST-") }) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func shardDirName(i int) string { return fmt.Sprintf("shards/%04d", i) }

var (
	// pebble's messages for a store whose files disagree with its MANIFEST
	// (pebble v2 open.go and objstorageprovider); the tests pin them.
	pebbleSizeMismatch = regexp.MustCompile(`object size mismatch \(([^)]*)\): (\d+) \(disk\) != (\d+) \(MANIFEST\)`)
	pebbleUnknownFile  = regexp.MustCompile(`file (\d+) \(type (\w+)\) unknown to the objstorage provider`)
)

// explainCause says what the library's typed errors mean.
func explainCause(err error) error {
	var (
		nb  *wal.NoBatchError
		wc  *wal.CorruptError
		sc  *store.StoreCorruptionError
		so  *store.StoreOpenError
		se  *store.StoreError
		le  *store.LogError
		sve *model.StoreVersionError
	)
	switch {
	case errors.As(err, &nb) && nb.CutShort():
		return &dirProblem{what: fmt.Sprintf("the write-ahead log %s is cut short: it ends at byte %d, but the shards' checkpoints resume it at offset %d (a copy that stopped early, or a full disk)",
			nb.File, nb.Size, nb.Offset), next: "writes acknowledged after those checkpoints are lost: " + nextRestore, err: err}
	case errors.As(err, &nb):
		return &dirProblem{what: fmt.Sprintf("the write-ahead log %s has no batch at offset %d, where the shards' checkpoints resume it: the log or a checkpoint is damaged",
			nb.File, nb.Offset), next: nextRestore, err: err}
	case errors.As(err, &wc):
		return &dirProblem{what: fmt.Sprintf("the write-ahead log %s is damaged at offset %d: %s", wc.File, wc.Offset, wc.Reason),
			next: nextRestore, err: err}
	case errors.As(err, &sc):
		return &dirProblem{what: sc.Problem(), next: nextRestore, err: err}
	case errors.As(err, &so):
		return explainStoreOpen(so, err)
	case errors.As(err, &sve):
		return err // not damage: its message says what to do
	case errors.As(err, &se):
		where := se.Path
		if se.Key != "" {
			where += ": key " + se.Key
		}
		return &dirProblem{what: fmt.Sprintf("shard store %s is damaged: %v", where, se.Err), next: nextRestore, err: err}
	case errors.As(err, &le):
		return &dirProblem{what: fmt.Sprintf("the write-ahead log and shard %d's store disagree at the batch at %s (LSN %d): %v", le.Shard, le.Pos, le.LSN, le.Err),
			next: nextRestore, err: err}
	}
	return err
}

func explainStoreOpen(so *store.StoreOpenError, err error) error {
	msg := so.Err.Error()
	if m := pebbleSizeMismatch.FindStringSubmatch(msg); m != nil {
		return &dirProblem{what: fmt.Sprintf("shard store %s is damaged: its file %s is %s bytes, but the store's MANIFEST says %s (cut short or replaced)",
			so.Path, m[1], m[2], m[3]), next: nextRestore, err: err}
	}
	if m := pebbleUnknownFile.FindStringSubmatch(msg); m != nil {
		name := m[1]
		if m[2] == "sstable" {
			name += ".sst"
		}
		return &dirProblem{what: fmt.Sprintf("shard store %s is damaged: its file %s, which the store's MANIFEST lists, is missing", so.Path, name),
			next: nextRestore, err: err}
	}
	if errors.Is(err, iofs.ErrPermission) {
		return &dirProblem{what: fmt.Sprintf("shard store %s cannot be read: %s", so.Path, firstLine(msg)),
			next: "run the command again as a user who can read the data directory", err: err}
	}
	return &dirProblem{what: fmt.Sprintf("shard store %s cannot be opened: %s", so.Path, firstLine(msg)),
		next: "check the store's files; if it is damaged, " + nextRestore, err: err}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// explainResource covers a command that ran out of open files (EMFILE,
// ENFILE) or of space (ENOSPC), which is no damage of the directory: it
// says what ran out and how to give the command more.
func explainResource(fs vfs.FS, dir string, err error) *dirProblem {
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		need, files, shards := filesNeeded(fs, dir)
		var lim unix.Rlimit
		limit := "the limit"
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
			limit = fmt.Sprintf("the limit, %d,", lim.Cur)
		}
		what := fmt.Sprintf("too many open files: %s is lower than this command needs (%s)", limit, firstLine(err.Error()))
		next := fmt.Sprintf("the directory is not damaged: raise the limit to at least %d (`ulimit -n %d` in the shell that runs fusee): its %d shard stores hold %d files, which stay open, and each store and the scratch space need a few more",
			need, need, shards, files)
		if errors.Is(err, syscall.ENFILE) {
			what = fmt.Sprintf("too many open files on the system (%s)", firstLine(err.Error()))
			next = fmt.Sprintf("the directory is not damaged: raise the system's limit (fs.file-max) or close other programs; this command needs about %d open files", need)
		}
		return &dirProblem{what: what, next: next, err: err, outOf: true}
	case errors.Is(err, syscall.ENOSPC):
		var pe *iofs.PathError
		where := ""
		if errors.As(err, &pe) {
			where = pe.Path
		}
		if rel, rerr := filepath.Rel(dir, where); where != "" && rerr == nil && !strings.HasPrefix(rel, "..") {
			return &dirProblem{what: fmt.Sprintf("no space left on the data directory's filesystem writing %s", where),
				next: "free space there and run the command again", err: err, outOf: true}
		}
		if where == "" {
			where = "a scratch file"
		}
		return &dirProblem{what: fmt.Sprintf("the scratch space is full: no space left writing %s, where the sorts and joins that outgrow --memory spill", where),
			next: "the data directory is not at fault: free space there, or give --scratch DIR on a filesystem with more room (a larger --memory spills less)", err: err, outOf: true}
	}
	return nil
}

// filesNeeded estimates how many files a command that opens every shard
// store of dir holds open: every file in the stores (pebble keeps their
// tables open), four more per store (its lock, manifest, log and a flush)
// and 128 for the log and scratch stores. files and shards are what the
// estimate counted.
func filesNeeded(fs vfs.FS, dir string) (need, files, shards int) {
	for _, n := range storesOnDisk(fs, dir) {
		names, _ := fs.List(store.StoreDir(fs, dir, n))
		files += len(names)
		shards++
	}
	return files + 4*shards + 128, files, shards
}

// explainBeforeSwitch explains a reshard's or upgrade's error as inspect's
// and verify's are explained (a missing path, a file, a missing or damaged
// store: explainDirError), as long as the directory is not switching:
// before its switch a reshard has changed nothing, so the directory's
// layout says what is wrong; during it the layout is half moved by design
// and the error's own message names the command that finishes it.
func explainBeforeSwitch(dir string, err error) error {
	if m, merr := meta.ReadAny(vfs.Default, dir); merr == nil && m.Format != meta.FormatLocal {
		return err
	}
	return explainDirError(vfs.Default, dir, err)
}

package reshard

import (
	"bufio"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// A report's lists, once encoded. A reshard writes its report whole
// (writeSourceReport) before the switch and prints it (and writes
// --report's copy) after: the two differ only in fields outside the
// lists (the switch's phase, a kept layout's path), and the lists do not
// change after the rewrite. So the first writing notes where each list's
// elements are in the file (listSpans), keeps the file open, and every
// later WriteJSON renders the rest of the report afresh and copies the
// lists' bytes from that file: at 1M runs (30 MB of JSON) encoding them
// again took about two thirds of a second of wall on the way out. The
// file is held open, not named: the switch renames it (reshard.new/
// report.json, then reshard-reports/pending.json, then its name), and a
// rename leaves an open file's content as it was.

// span is where a list's elements are in a written report: n bytes
// from offset off (after the list's "[", before its closing line).
type span struct{ off, n int64 }

// listSpans are the spans of renumbered_unfinished and token_changes, in
// that order.
type listSpans [2]span

// keptLists is a written report's file, open, with its lists' spans and
// how many elements each list had then.
type keptLists struct {
	f     vfs.File
	path  string
	spans listSpans
	lens  [2]int64
}

// writeKept writes rep whole to path, atomically and synced
// (meta.ReplaceFileWith), and keeps the file open for later WriteJSONs to
// copy its lists from (keepLists).
func (rep *Report) writeKept(fs vfs.FS, path string) error {
	var spans listSpans
	err := meta.ReplaceFileWith(fs, path, func(w io.Writer) (err error) {
		spans, err = rep.writeJSON(w)
		return err
	})
	if err != nil {
		return err
	}
	rep.keepLists(fs, path, spans)
	return nil
}

// keepLists notes that rep was written whole, its lists at spans, to
// path, which later WriteJSONs copy them from. A file that does not
// open is no error: WriteJSON then encodes the lists again.
func (rep *Report) keepLists(fs vfs.FS, path string, spans listSpans) {
	f, err := fs.Open(path)
	if err != nil {
		return
	}
	rep.closeKept()
	rep.kept = &keptLists{f: f, path: path, spans: spans, lens: [2]int64{rep.Renumbered.Len(), rep.Tokens.Len()}}
}

// closeKept closes the kept file, if any.
func (rep *Report) closeKept() error {
	if rep.kept == nil {
		return nil
	}
	err := rep.kept.f.Close()
	rep.kept = nil
	return err
}

// listElements writes list k's elements (0: renumbered_unfinished, 1:
// token_changes) to bw: copied from the kept file when there is one and
// the list is as long as it was then, else encoded.
func listElements[T any](bw *bufio.Writer, list *List[T], kept *keptLists, k int) func() error {
	return func() error {
		if kept == nil || kept.lens[k] != list.Len() {
			return encodeElements(bw, list)
		}
		return kept.copyList(bw, k)
	}
}

// copyList copies list k's elements from the kept file to bw, in pieces
// of up to copyBytes (bw's own ReadFrom would read its buffer's 64 KiB at
// a time: a read and a write of the output for each).
func (kl *keptLists) copyList(bw *bufio.Writer, k int) error {
	sp := kl.spans[k]
	buf := make([]byte, min(sp.n, copyBytes))
	n, err := io.CopyBuffer(struct{ io.Writer }{bw}, io.NewSectionReader(kl.f, sp.off, sp.n), buf)
	if err == nil && n != sp.n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("copying the report's lists from %s, written before the switch: %w", kl.path, err)
	}
	return nil
}

// copyBytes is the most copyList reads and writes at a time.
const copyBytes = 1 << 20

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

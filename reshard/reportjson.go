package reshard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON (two spaces) and a
// newline: byte for byte what json.MarshalIndent(rep, "", "  ") followed
// by a newline gives (and so what an Encoder with SetIndent("", "  ")
// writes), the schema and field order unchanged. The two lists that grow
// with the directory (renumbered_unfinished, token_changes) are read from
// their spill maps (List) and encoded an element at a time straight to w,
// through a small buffer, instead of the whole document being built in
// memory first: at 1M runs that document is tens of MB, and marshalling
// and indenting it took about three times that.
func (rep *Report) WriteJSON(w io.Writer) error {
	// The report without its lists: small. A list that is there renders
	// as [] (a nil one as null, as MarshalIndent renders it) and is
	// found by its key at the start of a line, which no string value can
	// hold (the encoder escapes newlines and quotes).
	shell := *rep
	if shell.Renumbered != nil {
		shell.Renumbered = &List[RenumberedRun]{}
	}
	if shell.Tokens != nil {
		shell.Tokens = &List[TokenChange]{}
	}
	return writeIndented(w, &shell, "\n", func(bw *bufio.Writer, doc []byte) ([]byte, error) {
		rest, err := streamList(bw, doc, "renumbered_unfinished", rep.Renumbered)
		if err != nil {
			return nil, err
		}
		return streamList(bw, rest, "token_changes", rep.Tokens)
	})
}

// writeIndented writes shell as json.MarshalIndent(shell, "", "  ")
// renders it, then end, through a 64 KiB buffer; fill writes the
// rendering's start and its lists (streamList) and returns the rest.
func writeIndented(w io.Writer, shell any, end string, fill func(bw *bufio.Writer, doc []byte) ([]byte, error)) error {
	head, err := json.MarshalIndent(shell, "", "  ")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	rest, err := fill(bw, head)
	if err != nil {
		return err
	}
	if _, err := bw.Write(rest); err != nil {
		return err
	}
	if _, err := bw.WriteString(end); err != nil {
		return err
	}
	return bw.Flush()
}

// streamList writes doc up to the empty list under key (a field of the
// top-level object), then list's elements indented as MarshalIndent
// indents them there, and returns the rest of doc after the list's
// opening bracket. A nil or empty list is left as doc has it.
func streamList[T any](bw *bufio.Writer, doc []byte, key string, list *List[T]) ([]byte, error) {
	if list.Len() == 0 {
		return doc, nil
	}
	mark := []byte("\n  \"" + key + "\": [")
	at := bytes.Index(doc, mark)
	if at < 0 || !bytes.HasPrefix(doc[at+len(mark):], []byte("]")) {
		return nil, fmt.Errorf("report JSON: no empty %q list to fill (the report's fields changed?)", key)
	}
	if _, err := bw.Write(doc[:at+len(mark)]); err != nil {
		return nil, err
	}
	var one, ind bytes.Buffer
	enc := json.NewEncoder(&one) // escapes as Marshal does; reuses one
	first := true
	err := list.Each(func(item *T) error {
		one.Reset()
		if err := enc.Encode(item); err != nil {
			return err
		}
		ind.Reset()
		if !first {
			ind.WriteByte(',')
		}
		first = false
		ind.WriteString("\n    ")
		if err := json.Indent(&ind, bytes.TrimSuffix(one.Bytes(), []byte("\n")), "    ", "  "); err != nil {
			return err
		}
		_, err := bw.Write(ind.Bytes())
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := bw.WriteString("\n  "); err != nil {
		return nil, err
	}
	return doc[at+len(mark):], nil
}

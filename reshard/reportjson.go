package reshard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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
	_, err := rep.writeJSON(w)
	return err
}

// writeJSON is WriteJSON, and says where in what it wrote each list's
// elements are. Once the report is kept in a file (keepLists), its lists'
// elements are copied from there instead of being encoded again: the
// lists do not change after the rewrite, and at 1M runs encoding them
// took most of the time the report is printed in.
func (rep *Report) writeJSON(w io.Writer) (listSpans, error) {
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
	var spans listSpans
	cw := &countingWriter{w: w}
	err := writeIndented(cw, &shell, "\n", func(bw *bufio.Writer, doc []byte) ([]byte, error) {
		pos := func() int64 { return cw.n + int64(bw.Buffered()) }
		rest, err := fillList(bw, doc, "renumbered_unfinished", rep.Renumbered.Len(),
			listElements(bw, rep.Renumbered, rep.kept, 0), pos, &spans[0])
		if err != nil {
			return nil, err
		}
		return fillList(bw, rest, "token_changes", rep.Tokens.Len(), listElements(bw, rep.Tokens, rep.kept, 1), pos, &spans[1])
	})
	return spans, err
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
// indents them there (encodeElements), and returns the rest of doc after
// the list's opening bracket. A nil or empty list is left as doc has it.
func streamList[T any](bw *bufio.Writer, doc []byte, key string, list *List[T]) ([]byte, error) {
	var sp span
	return fillList(bw, doc, key, list.Len(), func() error { return encodeElements(bw, list) },
		func() int64 { return 0 }, &sp)
}

// fillList is streamList with the n elements written by elements, and
// where they went (from pos, the place in the output) put in sp.
func fillList(bw *bufio.Writer, doc []byte, key string, n int64, elements func() error, pos func() int64, sp *span) ([]byte, error) {
	if n == 0 {
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
	start := pos()
	if err := elements(); err != nil {
		return nil, err
	}
	*sp = span{off: start, n: pos() - start}
	if _, err := bw.WriteString("\n  "); err != nil {
		return nil, err
	}
	return doc[at+len(mark):], nil
}

// encodeElements writes list's elements to bw as they sit in the report,
// the first without the comma before it.
//
// The report is written twice on a reshard's way out, alone on the
// critical path (synced before the switch, printed after it; the second
// time copies the first's lists, keptLists), and at 1M runs its lists
// are tens of MB of JSON: their elements are encoded in batches by one
// goroutine per core (at most listEncoders) and written in the list's
// order, so the bytes are those one encoder would write.
func encodeElements[T any](bw *bufio.Writer, list *List[T]) error {
	first := true
	return encodeInOrder(list, func(b []byte) error {
		if first { // the list's first element has no comma before it
			b, first = b[1:], false
		}
		_, err := bw.Write(b)
		return err
	})
}

// listBatch is how many list elements an encoder takes at a time, and
// listEncoders the most encoders a list gets.
const (
	listBatch    = 512
	listEncoders = 8
)

// encodeInOrder encodes list's elements, each as ",\n    " and the
// element indented as it sits in the report, on up to listEncoders
// goroutines, and hands write the batches' bytes in the list's order. Its
// batches (at most about three per encoder) go round, their elements and
// bytes reused. It stops reading the list at write's first error, and
// returns the first error of the list, an encoder or write.
func encodeInOrder[T any](list *List[T], write func([]byte) error) error {
	type batch struct {
		items []T
		out   bytes.Buffer
		err   error
		done  chan struct{} // one value once out (or err) is there
	}
	n := listBatch
	if Testing.listBatch > 0 {
		n = Testing.listBatch
	}
	k := max(min(runtime.GOMAXPROCS(0), listEncoders), 1)
	jobs, order, free := make(chan *batch), make(chan *batch, 2*k), make(chan *batch, 3*k+2)
	var encoders sync.WaitGroup
	for range k {
		encoders.Go(func() {
			var one bytes.Buffer
			enc := json.NewEncoder(&one) // escapes as Marshal does
			for bt := range jobs {
				bt.out.Reset()
				bt.err = encodeBatch(&bt.out, &one, enc, bt.items)
				bt.done <- struct{}{}
			}
		})
	}
	var stop atomic.Bool
	written := make(chan error, 1)
	go func() { // the writer: batches in the order they were read
		var err error
		for bt := range order {
			<-bt.done
			if err == nil {
				if err = bt.err; err == nil {
					err = write(bt.out.Bytes())
				}
				stop.Store(err != nil)
			}
			free <- bt
		}
		written <- err
	}()
	next := func() *batch {
		select {
		case bt := <-free:
			bt.items = bt.items[:0]
			return bt
		default:
			return &batch{items: make([]T, 0, n), done: make(chan struct{}, 1)}
		}
	}
	cur := next()
	send := func() {
		order <- cur // queued for the writer before an encoder can finish it
		jobs <- cur
		cur = next()
	}
	err := list.Each(func(item *T) error {
		if stop.Load() {
			return errEnough
		}
		cur.items = append(cur.items, *item) // Each decodes every element afresh
		if len(cur.items) == n {
			send()
		}
		return nil
	})
	if err == nil && len(cur.items) > 0 {
		send()
	}
	close(jobs)
	close(order)
	encoders.Wait()
	if werr := <-written; werr != nil {
		return werr
	}
	return err
}

// encodeBatch appends items to out as encodeInOrder gives them: each as
// ",\n    " and its JSON, escaped as Marshal escapes (enc, writing to
// one) and indented as MarshalIndent indents an element of a top-level
// field's list.
func encodeBatch[T any](out, one *bytes.Buffer, enc *json.Encoder, items []T) error {
	for i := range items {
		if appendElement(out, &items[i]) {
			continue
		}
		one.Reset()
		if err := enc.Encode(&items[i]); err != nil {
			return err
		}
		out.WriteString(",\n    ")
		if err := json.Indent(out, bytes.TrimSuffix(one.Bytes(), []byte("\n")), "    ", "  "); err != nil {
			return err
		}
	}
	return nil
}

// appendElement appends the two lists' elements (RenumberedRun,
// TokenChange) to out as encodeBatch's Encode and Indent would, without
// reflection: at 10M runs shrunk 8 -> 3 the lists hold 1.4M elements.
// It says false for any other type, left to them.
// TestWriteJSONMatchesWhole holds the bytes to MarshalIndent's.
func appendElement[T any](out *bytes.Buffer, item *T) bool {
	b := out.AvailableBuffer()
	switch it := any(item).(type) {
	case *RenumberedRun:
		b = append(b, ",\n    {\n      \"workflow_id\": "...)
		b = appendJSONString(b, it.WorkflowID)
		b = append(b, ",\n      \"old_shard\": "...)
		b = strconv.AppendInt(b, int64(it.OldShard), 10)
		b = append(b, ",\n      \"old_run\": "...)
		b = strconv.AppendUint(b, it.OldRun, 10)
		b = append(b, ",\n      \"new_shard\": "...)
		b = strconv.AppendInt(b, int64(it.NewShard), 10)
		b = append(b, ",\n      \"new_run\": "...)
		b = strconv.AppendUint(b, it.NewRun, 10)
		b = append(b, ",\n      \"old_key_prefix\": "...)
		b = appendJSONString(b, it.OldKey)
		b = append(b, ",\n      \"new_key_prefix\": "...)
		b = appendJSONString(b, it.NewKey)
		b = append(b, ",\n      \"pending_tokens\": "...)
		switch {
		case it.Tokens == nil:
			b = append(b, "null"...)
		case len(it.Tokens) == 0:
			b = append(b, "[]"...)
		default:
			b = append(b, '[')
			for k, t := range it.Tokens {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, "\n        {"...)
				b = appendTokenFields(b, "\n          ", t.Position, t.Old, t.New)
				b = append(b, "\n        }"...)
			}
			b = append(b, "\n      ]"...)
		}
		b = append(b, "\n    }"...)
	case *TokenChange:
		b = append(b, ",\n    {\n      \"workflow_id\": "...)
		b = appendJSONString(b, it.WorkflowID)
		b = append(b, ',')
		b = appendTokenFields(b, "\n      ", it.Position, it.Old, it.New)
		b = append(b, "\n    }"...)
	default:
		return false
	}
	out.Write(b)
	return true
}

// appendTokenFields appends a token's three fields, each on a line that
// starts with nl (a newline and the indentation).
func appendTokenFields(b []byte, nl string, pos uint32, was, now string) []byte {
	b = append(b, nl...)
	b = append(b, `"position": `...)
	b = strconv.AppendUint(b, uint64(pos), 10)
	b = append(b, ',')
	b = append(b, nl...)
	b = append(b, `"old_token": `...)
	b = appendJSONString(b, was)
	b = append(b, ',')
	b = append(b, nl...)
	b = append(b, `"new_token": `...)
	return appendJSONString(b, now)
}

// appendJSONString appends s as encoding/json writes a string: as it is
// between quotes when every byte is printable ASCII that json leaves
// alone, else as json.Marshal renders it (control bytes, quotes,
// backslashes, HTML's <, > and &, invalid UTF-8, U+2028 and U+2029 are
// escaped; rare in IDs and tokens).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always marshals
				panic(err)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

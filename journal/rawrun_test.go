package journal_test

import (
	"bytes"
	"testing"

	"github.com/fusee-dev/fusee/journal"
)

// FuzzScanRecord: ScanRecord accepts exactly what DecodeRecord accepts,
// its head agrees with the decoded record, and a record it says has no
// run reference is one whose references a rewrite never visits (so that
// copying its bytes is the same as decoding, rewriting and encoding it).
func FuzzScanRecord(f *testing.F) {
	for _, rec := range seeds(f).records {
		f.Add(rec)
	}
	f.Add([]byte{byte(journal.KindStep), 0x81, 0x00, 0x80, 0x00})
	f.Add([]byte("\x09\xc1\x30\x30\x04\x30\x30\x30\x30\x30\x30\x00\x30"))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, derr := journal.DecodeRecord(data)
		h, serr := journal.ScanRecord(data)
		if (derr == nil) != (serr == nil) {
			t.Fatalf("%x: DecodeRecord says %v, ScanRecord %v", data, derr, serr)
		}
		if derr != nil {
			return
		}
		if h.Kind != rec.Kind || h.Pos != rec.Pos || h.Ref != rec.Ref || string(h.WorkflowID(data)) != rec.WorkflowID {
			t.Fatalf("%x: head %+v (workflow ID %q), record %+v", data, h, h.WorkflowID(data), rec)
		}
		visited := false
		rec.MapRefs(1, func(_ journal.RefField, ref journal.RunRef) journal.RunRef {
			visited = true
			return journal.RunRef{Shard: ref.Shard + 1, Run: ref.Run + 1}
		})
		if visited && !h.HasRefs() {
			t.Fatalf("%x: a run reference behind a mask %#x without one", data, h.Mask)
		}
		if !h.HasRefs() && !bytes.Equal(journal.EncodeRecord(nil, &rec), journal.EncodeRecord(nil, &rec)) {
			t.Fatal("encoding is not deterministic")
		}
		// A history of the record twice: EachHistoryRecord gives back the
		// bytes, as DecodeHistory gives back the records.
		hist := journal.AppendHistoryLen(nil, 2)
		hist = journal.AppendHistoryRecord(journal.AppendHistoryRecord(hist, data), data)
		recs, err := journal.DecodeHistory(hist)
		if err != nil || len(recs) != 2 {
			t.Fatalf("DecodeHistory: %d records, %v", len(recs), err)
		}
		if n, err := journal.HistoryLen(hist); err != nil || n != 2 {
			t.Fatalf("HistoryLen: %d, %v", n, err)
		}
		n := 0
		err = journal.EachHistoryRecord(hist, func(p []byte, hh *journal.RecordHead) error {
			if !bytes.Equal(p, data) || *hh != h {
				t.Fatalf("history record %d: %x (head %+v), want %x (head %+v)", n, p, *hh, data, h)
			}
			n++
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("EachHistoryRecord: %d records, %v", n, err)
		}
		if err := journal.EachHistoryRecord(hist[:len(hist)-1], func([]byte, *journal.RecordHead) error { return nil }); err == nil {
			t.Fatal("EachHistoryRecord accepts a history cut short")
		}
	})
}

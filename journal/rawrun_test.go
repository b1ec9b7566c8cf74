package journal_test

import (
	"bytes"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
)

// FuzzScanRecord: ScanRecord accepts exactly what DecodeRecord accepts,
// its head agrees with the decoded record, and a record it says has no
// run reference is one whose references a rewrite never visits (so that
// copying its bytes is the same as decoding, rewriting and encoding it).
func FuzzScanRecord(f *testing.F) {
	for _, rec := range seeds(f).records {
		f.Add(rec)
	}
	f.Add([]byte{byte(model.KindStep), 0x81, 0x00, 0x80, 0x00})
	f.Add([]byte("\x09\xc1\x30\x30\x04\x30\x30\x30\x30\x30\x30\x00\x30"))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, derr := model.DecodeRecord(data)
		h, serr := model.ScanRecord(data)
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
		rec.MapRefs(1, func(_ model.RefField, ref model.RunRef) model.RunRef {
			visited = true
			return model.RunRef{Shard: ref.Shard + 1, Run: ref.Run + 1}
		})
		if visited && !h.HasRefs() {
			t.Fatalf("%x: a run reference behind a mask %#x without one", data, h.Mask)
		}
		if !h.HasRefs() && !bytes.Equal(model.EncodeRecord(nil, &rec), model.EncodeRecord(nil, &rec)) {
			t.Fatal("encoding is not deterministic")
		}
		// A history of the record twice: EachHistoryRecord gives back the
		// bytes, as DecodeHistory gives back the records.
		hist := model.AppendHistoryLen(nil, 2)
		hist = model.AppendHistoryRecord(model.AppendHistoryRecord(hist, data), data)
		recs, err := model.DecodeHistory(hist)
		if err != nil || len(recs) != 2 {
			t.Fatalf("DecodeHistory: %d records, %v", len(recs), err)
		}
		if n, err := model.HistoryLen(hist); err != nil || n != 2 {
			t.Fatalf("HistoryLen: %d, %v", n, err)
		}
		n := 0
		err = model.EachHistoryRecord(hist, func(p []byte, hh *model.RecordHead) error {
			if !bytes.Equal(p, data) || *hh != h {
				t.Fatalf("history record %d: %x (head %+v), want %x (head %+v)", n, p, *hh, data, h)
			}
			n++
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("EachHistoryRecord: %d records, %v", n, err)
		}
		if err := model.EachHistoryRecord(hist[:len(hist)-1], func([]byte, *model.RecordHead) error { return nil }); err == nil {
			t.Fatal("EachHistoryRecord accepts a history cut short")
		}
	})
}

package model

import (
	"reflect"
	"testing"
)

// TestMapRefsVisitsEveryRunField walks Record and Message by reflection:
// every field whose type carries a run number must be rewritten by
// MapRefs. Adding such a field without teaching MapRefs about it fails
// here.
func TestMapRefsVisitsEveryRunField(t *testing.T) {
	runTypes := map[reflect.Type]bool{
		reflect.TypeFor[RunRef](): true, reflect.TypeFor[ParentRef](): true,
		reflect.TypeFor[CtxKey](): true, reflect.TypeFor[Token](): true, reflect.TypeFor[RunNo](): true,
	}
	for _, tc := range []struct {
		name  string
		v     any
		apply func(v any, m RunMapper)
	}{
		{"Record", &Record{}, func(v any, m RunMapper) { v.(*Record).MapRefs(3, m) }},
		{"Message", &Message{}, func(v any, m RunMapper) { v.(*Message).MapRefs(m) }},
	} {
		rv := reflect.ValueOf(tc.v).Elem()
		var fields []string
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if !runTypes[f.Type] {
				continue
			}
			fields = append(fields, f.Name)
			// Name run 7 of shard 3 at position 5.
			fv := rv.Field(i)
			switch fv.Interface().(type) {
			case RunRef:
				fv.Set(reflect.ValueOf(RunRef{Shard: 3, Run: 7}))
			case ParentRef:
				fv.Set(reflect.ValueOf(ParentRef{Shard: 3, Run: 7, Pos: 5}))
			case CtxKey:
				fv.Set(reflect.ValueOf(CtxKey{WorkflowID: "w", Run: 7, Pos: 5}))
			case Token:
				fv.Set(reflect.ValueOf(Token{Shard: 3, Run: 7, Pos: 5}))
			case RunNo:
				fv.Set(reflect.ValueOf(RunNo(7)))
			}
		}
		if len(fields) == 0 {
			t.Fatalf("%s: no run-bearing fields found; the walk is broken", tc.name)
		}
		seen := map[RefField]int{}
		tc.apply(tc.v, func(f RefField, r RunRef) RunRef {
			seen[f]++
			if r != (RunRef{Shard: 3, Run: 7}) {
				t.Errorf("%s: field %s passed as %v, want 3:7", tc.name, f, r)
			}
			return RunRef{Shard: 9, Run: 1000}
		})
		for _, name := range fields {
			got := rv.FieldByName(name).Interface()
			var ok bool
			switch g := got.(type) {
			case RunRef:
				ok = g == RunRef{Shard: 9, Run: 1000}
			case ParentRef:
				ok = g == ParentRef{Shard: 9, Run: 1000, Pos: 5}
			case CtxKey:
				ok = g.Run == 1000 && g.Pos == 5 && g.WorkflowID == "w"
			case Token:
				ok = g.Shard == 9 && g.Run == 1000 && g.Pos == 5
			case RunNo:
				ok = g == 1000
			}
			if !ok {
				t.Errorf("%s.%s = %+v after MapRefs: it names a run but MapRefs did not rewrite it", tc.name, name, got)
			}
		}
		if len(seen) != len(fields) {
			t.Errorf("%s: MapRefs visited %d kinds of field (%v), the type has %d run-bearing fields %v", tc.name, len(seen), seen, len(fields), fields)
		}
	}
}

// TestMapRefsLeavesZero: references that name no run are not passed to
// the mapper and stay zero.
func TestMapRefsLeavesZero(t *testing.T) {
	r := Record{Kind: KindStep, Pos: 2}
	r.MapRefs(0, func(f RefField, ref RunRef) RunRef {
		t.Fatalf("mapper called for zero field %s", f)
		return ref
	})
	m := Message{ID: "x"}
	m.MapRefs(func(f RefField, ref RunRef) RunRef {
		t.Fatalf("mapper called for zero field %s", f)
		return ref
	})
}

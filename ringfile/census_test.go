package ringfile

import (
	"strings"
	"testing"
	"time"
)

func TestCensusGatesRetirement(t *testing.T) {
	p := newPolicy(t, "orders", 4, "a", "b")
	p, _ = OpenEpoch(p, EvenRing(4, []string{"b", "a", "c"}), ShardChange{})
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	head := "fusee-census 1\nnamespace orders\n"
	cases := []struct {
		name, reports string
		live          int64
		problems      []string
	}{
		{"all fresh and zero", "report cell=a node=a1 at=2026-03-01T12:00:00Z live=0:0,1:5\nreport cell=b node=b1 at=2026-03-01T12:00:10Z live=1:2\n", 0, nil},
		{"live work left, max over replicas", "report cell=a node=a1 at=2026-03-01T12:00:00Z live=0:3\nreport cell=a node=a2 at=2026-03-01T12:00:00Z live=0:4\nreport cell=b node=b1 at=2026-03-01T12:00:00Z live=0:1\n", 5, []string{"still has 5 live instances"}},
		{"a silent cell", "report cell=a node=a1 at=2026-03-01T12:00:00Z live=0:0\n", 0, []string{"cell b, in epoch 0's ring, sent no report"}},
		{"a stale report", "report cell=a node=a1 at=2026-03-01T11:00:00Z\nreport cell=b node=b1 at=2026-03-01T12:00:00Z\n", 0, []string{"c.census:3: the report of cell a node a1 is 1h0m30s old"}},
		{"from the future", "report cell=a node=a1 at=2026-03-01T13:00:00Z\nreport cell=b node=b1 at=2026-03-01T12:00:00Z\n", 0, []string{"in the future"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cen, err := ParseCensus("c.census", []byte(head+c.reports))
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckCensus(p, cen, 0, now, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Live != c.live || len(res.Problems) != len(c.problems) {
				t.Fatalf("live %d problems %q", res.Live, res.Problems)
			}
			for i, want := range c.problems {
				if !strings.Contains(res.Problems[i], want) {
					t.Errorf("problem %q, want %q", res.Problems[i], want)
				}
			}
		})
	}
}

func TestCensusParseErrors(t *testing.T) {
	_, err := ParseCensus("c.census", []byte("fusee-census 1\nnamespace orders\nnamespace x\nreport cell=a at=2026-03-01T12:00:00Z\nreport cell=a node=1 at=yesterday\nreport cell=a node=1 at=2026-03-01T12:00:00Z live=0:1,0:2\nreport cell=a node=1 at=2026-03-01T12:00:00Z\nreport cell=a node=1 at=2026-03-01T12:00:00Z\nhello\n"))
	wantErrContains(t, err, "c.census:3: duplicate namespace", "c.census:4: report needs", "c.census:5: report at", "c.census:6: report live: epoch 0 listed twice", "c.census:8: duplicate report for cell a node 1 (first on line 7)", `c.census:9: unknown key "hello"`)
	p := newPolicy(t, "orders", 2, "a")
	other, _ := ParseCensus("o.census", []byte("fusee-census 1\nnamespace payments\n"))
	if _, err := CheckCensus(p, other, 0, time.Now(), time.Minute); err == nil || !strings.Contains(err.Error(), "namespace payments") {
		t.Errorf("census of another namespace: %v", err)
	}
}

package sweeper

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks"
)

func TestDependsCycles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adj     map[int64][]int64
		members int
		cycles  [][]int64
	}{
		{"empty", nil, 0, nil},
		{"dag", map[int64][]int64{1: {2, 3}, 2: {3}}, 0, nil},
		{"self loop", map[int64][]int64{1: {1}, 2: {1}}, 1, [][]int64{{1, 1}}},
		{"two cycles joined", map[int64][]int64{1: {2}, 2: {1, 5}, 5: {6}, 6: {7}, 7: {6}}, 4, [][]int64{{1, 2, 1}, {6, 7, 6}}},
		{"figure eight", map[int64][]int64{1: {2}, 2: {1, 3}, 3: {4}, 4: {2}}, 4, [][]int64{{1, 2, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, cs := dependsCycles(tc.adj)
			if m != tc.members || fmt.Sprint(cs) != fmt.Sprint(tc.cycles) {
				t.Fatalf("got %d %v, want %d %v", m, cs, tc.members, tc.cycles)
			}
		})
	}
	// More than MaxCycleExamples cycles: all counted, ten shown.
	adj := map[int64][]int64{}
	for i := int64(0); i < 15; i++ {
		adj[2*i+1] = []int64{2*i + 2}
		adj[2*i+2] = []int64{2*i + 1}
	}
	if m, cs := dependsCycles(adj); m != 30 || len(cs) != MaxCycleExamples {
		t.Fatalf("got %d members, %d examples", m, len(cs))
	}
}

// TestRunnerRecordsDetails: a Detailer's details show in the status after a
// pass.
func TestRunnerRecordsDetails(t *testing.T) {
	s := &detailSweeper{}
	r, p := newTestRunner(t, s, Options{Interval: waitLimit * 10, ConfigEnabled: true})
	mustStart(t, r)
	st := p.waitFor(t, r, "a pass", func(s cks.SweeperStatus) bool { return s.RunCount == 1 })
	if st.Details != "pass 1" {
		t.Fatalf("details %#v", st.Details)
	}
	b, _ := json.Marshal(st)
	if !json.Valid(b) || !strings.Contains(string(b), `"details":"pass 1"`) {
		t.Fatalf("status JSON %s", b)
	}
	if b, _ := json.Marshal(cks.SweeperStatus{}); strings.Contains(string(b), "details") {
		t.Fatalf("details not omitted: %s", b)
	}
}

type detailSweeper struct {
	mu sync.Mutex
	n  int
}

func (*detailSweeper) ID() string { return "detailed" }
func (d *detailSweeper) SweepOnce(context.Context) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	return d.n, nil
}
func (d *detailSweeper) Details() any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("pass %d", d.n)
}

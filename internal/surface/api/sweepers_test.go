package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

func TestSweepersOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()

	sts, err := c.ListSweepers(ctx)
	if err != nil || len(sts) != 8 || sts[0].AgentID != sweeper.LeaseReaperID || sts[0].Kind != "sweeper" {
		t.Fatalf("list: %+v %v", sts, err)
	}
	st, err := c.StartSweeper(ctx, sweeper.LeaseReaperID)
	if err != nil || !st.Running || st.DesiredRunning == nil || !*st.DesiredRunning {
		t.Fatalf("start: %+v %v", st, err)
	}
	st, err = c.StopSweeper(ctx, sweeper.LeaseReaperID)
	if err != nil || st.Running || st.DesiredRunning == nil || *st.DesiredRunning {
		t.Fatalf("stop: %+v %v", st, err)
	}
	if o, _ := f.store.Sweepers.GetSweeperDesiredRunning(ctx, sweeper.LeaseReaperID); o == nil || *o {
		t.Fatal("stop did not persist desired_running=false")
	}
	// An id no sweeper of cks has is bad input, naming the ids (the input
	// schema's enum); one this hub does not run would be not_found.
	_, err = c.SweeperStatus(ctx, "contradictions")
	if e := apiErr(t, err); e.Status != 400 || e.Field != "agent_id" || !strings.Contains(e.Message, "lease_reaper") {
		t.Fatalf("unknown sweeper: %v, want 400 naming agent_id and the known ids", err)
	}
	resp, body := f.get(t, "/metrics", f.token)
	if resp.StatusCode != 200 || !strings.Contains(body, `cks_sweeper_running{agent_id="lease_reaper"} 0`) {
		t.Fatalf("/metrics lacks the sweeper gauge:\n%s", body)
	}
}

func TestStoppedLongerThan(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, _, err := f.store.Tasks.Enqueue(ctx, cks.NewTask{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Tasks.StopTask(ctx, ledger.StopParams{ID: task.ID, Actor: "test", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		t.Helper()
		resp, body := f.get(t, "/v1/tasks?"+q, f.token)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, body)
		}
		var page cks.TaskPage
		json.Unmarshal([]byte(body), &page)
		return len(page.Tasks)
	}
	f.clock.Advance(23 * time.Hour)
	if n := count("stopped_longer_than=24h"); n != 0 {
		t.Fatalf("after 23h: %d listed", n)
	}
	f.clock.Advance(time.Hour)
	if n := count("stopped_longer_than=24h"); n != 1 {
		t.Fatalf("after 24h: %d listed, want 1", n)
	}
	resp, body := f.get(t, "/v1/tasks?stopped_longer_than=soon", f.token)
	if resp.StatusCode != 400 || decodeError(t, body).Error.Field != "stopped_longer_than" {
		t.Fatalf("bad duration: %d %s", resp.StatusCode, body)
	}

	// order=stopped_first: the STOPPED task heads the page, counted.
	open, _, err := f.store.Tasks.Enqueue(ctx, cks.NewTask{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	resp, body = f.get(t, "/v1/tasks?order=stopped_first", f.token)
	var page cks.TaskPage
	if err := json.Unmarshal([]byte(body), &page); resp.StatusCode != 200 || err != nil || page.Stopped == nil || *page.Stopped != 1 ||
		len(page.Tasks) != 2 || page.Tasks[0].ID != task.ID || page.Tasks[1].ID != open.ID {
		t.Fatalf("order=stopped_first: %d %v %s", resp.StatusCode, err, body)
	}
	if resp, body = f.get(t, "/v1/tasks", f.token); strings.Contains(body, `"stopped"`) {
		t.Fatalf("a page by id counts STOPPED tasks: %d %s", resp.StatusCode, body)
	}
	for _, q := range []string{"order=stopped_first&state=OPEN", "order=stopped_first&stopped_longer_than=1h", "order=newest"} {
		resp, body = f.get(t, "/v1/tasks?"+q, f.token)
		if resp.StatusCode != 400 || decodeError(t, body).Error.Field != "order" {
			t.Errorf("%s: %d %s, want 400 naming order", q, resp.StatusCode, body)
		}
	}
}

// TestGraphHealthDetailsOverHTTP: graph_health's counts are in its status at
// GET /v1/sweepers/graph_health.
func TestGraphHealthDetailsOverHTTP(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx := context.Background()
	var ids []int64
	for range 5 {
		o, err := f.store.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	// ids[0..2] form a depends_on cycle; ids[3] and ids[4] are orphans.
	if _, err := f.store.Objects.AddEdges(ctx, []knowledge.NewEdge{{Src: ids[0], Dst: ids[1], BaseType: "depends_on"},
		{Src: ids[1], Dst: ids[2], BaseType: "depends_on"}, {Src: ids[2], Dst: ids[0], BaseType: "depends_on"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartSweeper(ctx, sweeper.GraphHealthID); err != nil { // the first pass runs at once
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for {
		var resp *http.Response
		resp, body = f.get(t, "/v1/sweepers/graph_health", f.token)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		// The status's own details, not a recorded pass's: a pass is
		// stored (recent_passes) before the status counts its run.
		var top struct {
			Details json.RawMessage `json:"details"`
		}
		if json.Unmarshal([]byte(body), &top) == nil && len(top.Details) > 0 && string(top.Details) != "null" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no details after 30s: %s", body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var st struct {
		LastResultCount int `json:"last_result_count"`
		Details         struct {
			Objects       int       `json:"objects"`
			Orphans       int       `json:"orphans"`
			DanglingEdges int       `json:"dangling_edges"`
			CycleMembers  int       `json:"cycle_members"`
			Cycles        [][]int64 `json:"cycles"`
		} `json:"details"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	d := st.Details
	if st.LastResultCount != 5 || d.Objects != 5 || d.Orphans != 2 || d.DanglingEdges != 0 || d.CycleMembers != 3 ||
		len(d.Cycles) != 1 || len(d.Cycles[0]) != 4 || d.Cycles[0][0] != ids[0] {
		t.Fatalf("graph_health status %s", body)
	}
	// The other sweepers' statuses carry no details.
	var reaper map[string]json.RawMessage
	if _, body := f.get(t, "/v1/sweepers/lease_reaper", f.token); json.Unmarshal([]byte(body), &reaper) != nil || reaper["details"] != nil {
		t.Fatalf("lease_reaper status has details: %s", body)
	}
}

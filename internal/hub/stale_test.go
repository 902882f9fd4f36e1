package hub_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
)

// TestStaleStopThresholdIsOneSetting: CKS_STALE_STOP_THRESHOLD is the one
// setting of "stopped too long": the studio's board flags a task held longer
// than it, as the stale_stop_report sweeper counts it (the board used a 24 h
// constant of its own, so the two disagreed when the variable was set).
func TestStaleStopThresholdIsOneSetting(t *testing.T) {
	// The hub's one clock (services included) stamps the stop; two hours
	// later the task has been held for two hours.
	c := clock.NewFake(time.Now())
	set, err := config.ParseHub(func(k string) string {
		if k == "CKS_STALE_STOP_THRESHOLD" {
			return "1h"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	h := runHub(t, hub.Config{Clock: c, Settings: set})
	var created struct {
		Task struct {
			ID int64 `json:"task_id"`
		} `json:"task"`
	}
	if st := h.call(t, "POST", "/v1/tasks", `{"type":"t","title":"held"}`, &created); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if st := h.call(t, "POST", fmt.Sprintf("/v1/tasks/%d/stop", created.Task.ID), `{"reason":"hold"}`, nil); st != http.StatusOK {
		t.Fatalf("stop: %d", st)
	}
	c.Advance(2 * time.Hour)
	page := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", h.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+h.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	board := page("/tasks")
	for _, want := range []string{"1 stopped for longer than 1 h.", "row--stale", "over 1 h"} {
		if !strings.Contains(board, want) {
			t.Errorf("board lacks %q with CKS_STALE_STOP_THRESHOLD=1h", want)
		}
	}
	if task := page(fmt.Sprintf("/tasks/%d", created.Task.ID)); !strings.Contains(task, "Stopped for longer than 1 h") {
		t.Errorf("task page does not say it is stopped for longer than 1 h")
	}
}

// TestInjectedClockIsTheServicesClock: a clock given to hub.Run is the
// clock of the services' writes as well as of the hub's loops (the backend
// was opened with the host's, so a task's created_at and the sweepers'
// judgement of it came from two clocks).
func TestInjectedClockIsTheServicesClock(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	h := runHub(t, hub.Config{Clock: clock.NewFake(at)})
	var created struct {
		Task struct {
			CreatedAt time.Time `json:"created_at"`
		} `json:"task"`
	}
	if st := h.call(t, "POST", "/v1/tasks", `{"type":"t","title":"stamped"}`, &created); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if !created.Task.CreatedAt.Equal(at) {
		t.Fatalf("created_at = %v, want the hub's clock %v", created.Task.CreatedAt, at)
	}
}

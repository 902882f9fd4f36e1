package hub_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/hub"
)

// TestStaleStopThresholdIsOneSetting: CKS_STALE_STOP_THRESHOLD is the one
// setting of "stopped too long": the studio's board flags a task held longer
// than it, as the stale_stop_report sweeper counts it (the board used a 24 h
// constant of its own, so the two disagreed when the variable was set).
func TestStaleStopThresholdIsOneSetting(t *testing.T) {
	// The store stamps the stop with the real time; the hub's clock is two
	// hours on, so the task has been held for two hours.
	c := clock.NewFake(time.Now().Add(2 * time.Hour))
	h := runHub(t, hub.Config{Clock: c, Getenv: func(k string) string {
		if k == "CKS_STALE_STOP_THRESHOLD" {
			return "1h"
		}
		return ""
	}})
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

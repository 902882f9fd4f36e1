package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestScreenshots regenerates the screenshots of the main pages into the
// directory CKS_SCREENSHOTS names (scripts/screenshots: docs/screenshots),
// with the browser harness against a hub with a real agent, tasks, a
// researched question and a forked object; without the variable it skips.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("CKS_SCREENSHOTS")
	if dir == "" {
		t.Skip("CKS_SCREENSHOTS not set: run scripts/screenshots to regenerate docs/screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, "sqlite", nil)
	startAgent(t, h, "critic")
	startAgent(t, h, "enrichment")
	for _, task := range []string{
		`{"type":"review","title":"Review the lease reaper's window","description":"Check the stale window against the heartbeat.","priority":2}`,
		`{"type":"enrich","title":"Link orphan claims","priority":1}`,
		`{"type":"critique","title":"Settle claims 4 and 9","acceptance_criteria":"One claim stands, the other is disputed."}`,
	} {
		if code, out := h.api(t, http.MethodPost, "/v1/tasks", task); code != http.StatusCreated {
			t.Fatalf("create_task: %d %s", code, out)
		}
	}
	seedFlow(t, h)
	startPipeline(t, h)
	q := h.submitQuestion(t, "How does cks stop a running task?")
	f := h.submitQuestion(t, "Which head wins?")
	for _, content := range []string{`{"question":"Which head wins?","note":"from the left"}`, `{"question":"Which head wins, really?"}`} {
		if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/objects/%d/versions", f), `{"base_version":1,"content":`+content+`}`); code != http.StatusCreated {
			t.Fatalf("write_object_version: %d %s", code, out)
		}
	}
	shoot := func(name, path, ready string, width int) {
		t.Helper()
		tb := newTab(t, width)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(h.URL+path), waitVisible(chromedp.CSS(ready)))
		ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+".png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", out, len(png))
	}
	for _, s := range []struct {
		name, path, ready string
		width             int
	}{
		{"panel", "/", ".card", 0},
		{"tasks", "/tasks", "table.tasks", 0},
		{"task", "/tasks/1", "h1", 0},
		{"knowledge", "/objects", "table.objects", 0},
		{"object", fmt.Sprintf("/objects/%d", q), `[data-answer]`, 0},
		{"forks", fmt.Sprintf("/objects/%d/forks", f), "table[data-diff]", 0},
		{"research", fmt.Sprintf("/research?id=%d", q), `[data-terminal]`, 0},
		{"panel-phone", "/", ".card", 390},
		{"charts", "/charts", "#chart-sweepers svg", 0},
		{"charts-phone", "/charts", "#chart-sweepers svg", 390},
		{"flow", "/flow", `[data-schedule-card="nightly"] [data-next-run]`, 0},
	} {
		shoot(s.name, s.path, s.ready, s.width)
	}
	// The Spend page last: its day of reports adds tasks to the board.
	seedSpendHistory(t, h)
	shoot("spend", "/spend", `#chart-cost-type svg rect`, 0)
}

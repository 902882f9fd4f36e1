package studio_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/studio"
)

// TestChartsPage: /charts draws the last hour of the ledger — a bar per
// minute with finished tasks, a line per unfinished state with tasks, the
// claim latency — and a line of a sweeper's passes, each SVG with its
// <title> and <desc>; the fragment is the charts alone, marked for the
// page script.
func TestChartsPage(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	for range 3 {
		if _, _, err := e.store.Tasks.Enqueue(ctx, cks.NewTask{Type: "chart"}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(90 * time.Second)
	claimed, err := e.store.Tasks.Claim(ctx, "w", []string{"chart"}, 2, time.Hour)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	if _, err := e.store.Tasks.Complete(ctx, claimed[0].ID, claimed[0].LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.Start(ctx, "lease_reaper"); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, e.ctl, "lease_reaper", 1)

	page := get(t, e.h, studio.ChartsPath)
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body, `<a href="/charts" aria-current="page">Charts</a>`,
		`data-live-fragment="/studio/charts" data-live-kind="charts" data-live-events="tasks sweepers" data-live-min-ms="2000"`,
		`<title id="chart-finished-title">Tasks finished per minute</title>`,
		`completed: 1 tasks / min in all`,
		`<rect class="chart__s0" `, `<title>completed 2026-11-30 12:01 UTC: 1 tasks / min</title>`,
		`<title id="chart-depth-title">Queue depth by state</title>`, `</span>OPEN</li>`, `</span>CLAIMED</li>`,
		`<title id="chart-latency-title">Claim latency</title>`, `p50: from 90 to 90 s, latest 90.`,
		`<title id="chart-sweepers-title">Sweeper pass durations</title>`, `</span>lease_reaper</li>`)
	mustNotContain(t, "page", page.body, `</span>COMPLETED</li>`, `</span>WAITING</li>`, "no data in this window</text></svg><ul class=\"chart-legend\"><li><span class=\"chart-legend__swatch chart__s0\" aria-hidden=\"true\"></span>lease_reaper")
	if n := strings.Count(page.body, `<svg class="chart"`); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}

	frag := get(t, e.h, studio.ChartsFragmentPath)
	wantHTML(t, frag, http.StatusOK)
	if got := frag.header.Get("X-Studio-Fragment"); got != "charts" {
		t.Errorf("X-Studio-Fragment = %q, want charts", got)
	}
	mustNotContain(t, "fragment", frag.body, "<html", "<h1>")
	mustContain(t, "fragment", frag.body, `<svg class="chart"`)
}

package studio_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/studio"
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
	claimed, err := e.store.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"chart"}, N: 2, Lease: time.Hour})
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
		`data-live-fragment="/studio/charts?window=1h" data-live-kind="charts" data-live-events="tasks sweepers" data-live-min-ms="2000"`,
		`<title id="chart-finished-title">Tasks finished per minute</title>`,
		`completed: 1 tasks / min in all`,
		`<rect class="chart__s0" `, `<title>completed 2026-11-30 12:01 UTC: 1 tasks / min</title>`,
		`<title id="chart-depth-title">Queue depth by state</title>`, `</svg>OPEN</li>`, `</svg>CLAIMED</li>`,
		`<title id="chart-latency-title">Claim latency</title>`, `p50: from 90 to 90 s, latest 90.`,
		`<title id="chart-sweepers-title">Sweeper pass durations</title>`, `</svg>lease_reaper</li>`)
	mustNotContain(t, "page", page.body, `</svg>COMPLETED</li>`, `</svg>WAITING</li>`)
	sweepers := page.body[strings.Index(page.body, `id="chart-sweepers"`):]
	mustNotContain(t, "the sweepers' chart", sweepers[:strings.Index(sweepers, `</figure>`)], "no data in this window")
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

// TestChartsWindows: the charts page offers the last hour, 24 hours and 7
// days (?window=), the current one marked, its charts in steps of a
// minute, 15 minutes and 2 hours, and its live fragment keeping the
// window; a window it does not offer is a 400 naming window.
func TestChartsWindows(t *testing.T) {
	e := newFullEnv(t)
	for _, c := range []struct{ window, per, unit string }{
		{"", "minute", "tasks / min"}, {"1h", "minute", "tasks / min"},
		{"24h", "15 minutes", "tasks / 15 min"}, {"7d", "2 hours", "tasks / 2 h"},
	} {
		win := c.window
		if win == "" {
			win = "1h"
		}
		page := get(t, e.h, studio.ChartsPath+"?window="+c.window)
		wantHTML(t, page, http.StatusOK)
		mustContain(t, "window "+win, page.body, `<title id="chart-finished-title">Tasks finished per `+c.per+`</title>`,
			`>`+c.unit+`</text>`, `data-live-fragment="/studio/charts?window=`+win+`"`,
			`href="/charts?window=`+win+`" data-window="`+win+`" aria-current="page">`)
		if n := strings.Count(page.body, `aria-current="page">Last `); n != 1 {
			t.Errorf("window %s: %d windows marked current, want 1", win, n)
		}
		frag := get(t, e.h, studio.ChartsFragmentPath+"?window="+c.window)
		mustContain(t, "fragment of window "+win, frag.body, `data-window="`+win+`"`, "Tasks finished per "+c.per)
	}
	bad := get(t, e.h, studio.ChartsPath+"?window=2h")
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "window") || !strings.Contains(bad.body, "1h, 24h or 7d") {
		t.Errorf("window=2h: %d %s", bad.status, bad.body)
	}
}

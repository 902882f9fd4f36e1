package studio_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestBrowserFlowControl (issue 42 item 7): on both backends, the Flow
// control page, reached from the navigation, pauses a type from its form
// (list_paused_types then names it, with the reason) and resumes it from
// its row; shows a schedule's next five runs, in order and on its slots;
// triggers it (the fire's task is linked) and deletes it after a confirm;
// and follows changes made by another process on the database without a
// reload — a type paused and a schedule created through a second handle —
// with its fallback poll an hour long, so only the hub's events
// (flow_control, schedules) can bring them.
func TestBrowserFlowControl(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		if code, out := h.api(t, http.MethodPost, "/v1/schedules",
			`{"name":"every5","cron":"*/5 * * * *","task":{"type":"report","title":"Five-minute report"}}`); code != http.StatusCreated {
			t.Fatalf("create_schedule: %d %s", code, out)
		}
		tb := newTab(t, 0)
		tb.onEveryPage(`window.cksPollMs = 3600000`)
		tb.signIn(h, h.Token)
		tb.do(click(chromedp.CSS(`nav a[href="/flow"]`)), waitVisible(chromedp.ID("schedules-heading")))
		tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
		js[bool](tb, `window.cksNoReload = true`)

		// The schedule's next five runs: on its 5-minute slots, in order.
		runs := js[[]string](tb, `[...document.querySelectorAll('[data-schedule-card="every5"] [data-next-run]')].map(r => r.dataset.nextRun)`)
		if len(runs) != 5 {
			t.Fatalf("next runs %v, want 5", runs)
		}
		var last time.Time
		for _, r := range runs {
			at, err := time.Parse(time.RFC3339, r)
			if err != nil || at.Minute()%5 != 0 || at.Second() != 0 || !at.After(last) {
				t.Errorf("next runs %v: %q is not a 5-minute slot after the one before", runs, r)
			}
			last = at
		}

		// Pause a type from the form, then resume it from its row. The
		// fields are typed into by key events to the focused field (no
		// node of the DOM agent's, which a live update may renew).
		tb.do(
			click(chromedp.ID("pause-type")), chromedp.KeyEvent("build"),
			click(chromedp.ID("pause-reason")), chromedp.KeyEvent("provider down"),
			click(chromedp.CSS(`[data-type-pause-button]`)),
			waitVisible(chromedp.CSS(`[data-paused-row="build"]`)),
		)
		if got := tb.text(`[data-paused-row="build"] [data-paused-reason]`); got != "provider down" {
			t.Errorf("the paused row's reason reads %q", got)
		}
		code, out := h.api(t, http.MethodGet, "/v1/types/paused", "")
		var paused cks.PausedTypeList
		if err := json.Unmarshal([]byte(out), &paused); code != http.StatusOK || err != nil || len(paused.Types) != 1 ||
			paused.Types[0].Type != "build" || paused.Types[0].Reason != "provider down" {
			t.Fatalf("list_paused_types after the form: %d %s %v", code, out, err)
		}
		if v := js[string](tb, `document.getElementById("pause-type").value`); v != "" {
			t.Errorf("the form kept %q after the pause", v)
		}
		tb.do(click(chromedp.CSS(`button[data-type-resume="build"]`)))
		tb.waitTrue("the resumed type's row gone", `!document.querySelector('[data-paused-row="build"]') && !!document.querySelector('[data-no-paused]')`)

		// Set a limit from its form; a task of its key claimed by another
		// process shows as a bar of the cap without a reload.
		tb.do(
			click(chromedp.ID("limit-name")), chromedp.KeyEvent("openai"),
			click(chromedp.ID("limit-pattern")), chromedp.KeyEvent("openai:*"),
			click(chromedp.ID("limit-max")), chromedp.KeyEvent("2"),
			click(chromedp.CSS(`[data-limit-set-button]`)),
			waitVisible(chromedp.CSS(`[data-limit-row="openai"]`)),
		)
		if got := tb.text(`[data-limit-row="openai"] [data-limit-max]`); got != "2" {
			t.Errorf("the limit's max running reads %q", got)
		}
		other := h.open(t)
		backendtest.MustEnqueue(t, other, cks.NewTask{Type: "llm", ConcurrencyKeys: []string{"openai:gpt-5"}})
		if got, err := other.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "w", Types: []string{"llm"}, N: 1, Lease: time.Hour}); err != nil || len(got) != 1 {
			t.Fatalf("claim of the keyed task: %d, %v", len(got), err)
		}
		tb.waitTrue("the held key shown", `!!document.querySelector('[data-limit-row="openai"] [data-key-running="openai:gpt-5"] meter[value="1"]')`)

		// Trigger now links the fire's task; Delete removes the card.
		tb.do(click(chromedp.CSS(`[data-schedule="every5"][data-schedule-action="trigger"]`)))
		tb.waitTrue("the fire's task linked", `!!document.querySelector('[data-schedule-card="every5"] [data-last-fire] a.task')`)

		// Another process on the database: its changes appear live.
		b := h.open(t)
		if _, err := b.Tasks.PauseType(context.Background(), ledger.PauseTypeParams{Type: "deploy", Actor: "outsider", Reason: "release freeze"}); err != nil {
			t.Fatal(err)
		}
		tb.waitTrue("the type paused elsewhere listed", `!!document.querySelector('[data-paused-row="deploy"]')`)
		if got := tb.text(`[data-paused-row="deploy"] [data-paused-by]`); got != "outsider" {
			t.Errorf("the type paused elsewhere reads paused by %q", got)
		}
		if _, err := b.Schedules.Create(context.Background(), cks.NewSchedule{Name: "hourly", Cron: "@hourly",
			Task: cks.ScheduleTask{Type: "report"}, CreatedBy: "outsider"}); err != nil {
			t.Fatal(err)
		}
		tb.waitTrue("the schedule created elsewhere listed", `document.querySelectorAll('[data-schedule-card="hourly"] [data-next-run]').length === 5`)

		dialogs := tb.answerDialogs()
		tb.do(click(chromedp.CSS(`[data-schedule="every5"][data-schedule-action="delete"]`)))
		if msg := dialogs.wait(t, 1); !strings.Contains(msg, "Delete the schedule every5?") {
			t.Errorf("the delete's confirmation says %q", msg)
		}
		tb.waitTrue("the deleted schedule's card gone", `!document.querySelector('[data-schedule-card="every5"]')`)
		tb.do(click(chromedp.CSS(`button[data-limit-delete="openai"]`)))
		if msg := dialogs.wait(t, 2); !strings.Contains(msg, "Delete the limit openai?") {
			t.Errorf("the limit delete's confirmation says %q", msg)
		}
		tb.waitTrue("the deleted limit's row gone", `!document.querySelector('[data-limit-row="openai"]') && !!document.querySelector('[data-no-limits]')`)
		code, out = h.api(t, http.MethodGet, "/v1/schedules/every5", "")
		if code != http.StatusNotFound {
			t.Errorf("get_schedule after Delete: %d %s, want 404", code, out)
		}
		if !js[bool](tb, `window.cksNoReload === true`) {
			t.Error("the page reloaded; it should follow the changes live")
		}
		if msgs := js[string](tb, `[...document.querySelectorAll('#flow [data-action-error]')].map(e => e.textContent).join(" ")`); strings.TrimSpace(msgs) != "" {
			t.Errorf("the page shows errors: %s", msgs)
		}
	})
}

// seedFlow makes, through the API, what the Flow control page shows: the
// type build paused with a reason, the schedule nightly running (its task
// triggered once) and the schedule weekly paused.
func seedFlow(t testing.TB, h consoleHub) {
	t.Helper()
	for _, c := range []struct{ path, body string }{
		{"/v1/types/pause", `{"type":"build","reason":"the provider answers 429 to every call"}`},
		{"/v1/schedules", `{"name":"nightly","cron":"0 2 * * *","time_zone":"Europe/Berlin","misfire":"run_once","task":{"type":"report","title":"Nightly report"}}`},
		{"/v1/schedules/nightly/trigger", ``},
		{"/v1/schedules", `{"name":"weekly","cron":"@weekly","task":{"type":"digest","title":"Weekly digest"},"paused":true}`},
		{"/v1/limits", `{"name":"openai","pattern":"openai:*","max_running":2}`},
		{"/v1/tasks", `{"type":"llm","title":"Summarize","concurrency_keys":["openai:gpt-5"]}`},
		{"/v1/tasks", `{"type":"llm","title":"Summarize","concurrency_keys":["openai:gpt-5"]}`},
		{"/v1/tasks", `{"type":"llm","title":"Classify","concurrency_keys":["openai:mini"]}`},
		{"/v1/tasks/claim", `{"worker":"seed","types":["llm"],"n":3}`},
	} {
		if code, out := h.api(t, http.MethodPost, c.path, c.body); code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, code, out)
		}
	}
}

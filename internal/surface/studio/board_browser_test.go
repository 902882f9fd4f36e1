package studio_test

// Browser tests of the board's search, sort and bulk actions, the retry of
// a FAILED task and the edit history on the task page.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
)

// claimOne claims one task of typ through the API (claim_tasks) and returns
// it with its lease token.
func (h consoleHub) claimOne(t testing.TB, typ string) cks.ClaimedTask {
	t.Helper()
	code, out := h.api(t, http.MethodPost, "/v1/tasks/claim", fmt.Sprintf(`{"types":[%q],"worker":"w-%s"}`, typ, typ))
	var claimed cks.ClaimedTasks
	if err := json.Unmarshal([]byte(out), &claimed); code != http.StatusOK || err != nil || len(claimed.Tasks) != 1 {
		t.Fatalf("claim %s: %d %s %v", typ, code, out, err)
	}
	return claimed.Tasks[0]
}

// TestBrowserBulkStopByFilter: on both backends, the search box narrows the
// board to the matching tasks (the URL keeps the search), and a bulk stop
// of "all matching the filter" stops the 20 that match — one of them
// claimed, whose abort is flagged not confirmed — refuses the cancelled one
// with its reason, and leaves the tasks the search does not match alone.
func TestBrowserBulkStopByFilter(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		var batch []cks.Task
		for i := range 19 {
			batch = append(batch, h.createTask(t, cks.NewTask{Type: "batch", Title: fmt.Sprintf("Nightly report %d", i)}))
		}
		running := h.createTask(t, cks.NewTask{Type: "batch-run", Title: "nightly report, running"})
		h.claimOne(t, "batch-run")
		batch = append(batch, running)
		cancelled := h.createTask(t, cks.NewTask{Type: "batch", Title: "Nightly report, cancelled"})
		if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/cancel", cancelled.ID), `{}`); code != http.StatusOK {
			t.Fatalf("cancel: %d %s", code, out)
		}
		others := []cks.Task{h.createTask(t, cks.NewTask{Type: "batch", Title: "Weekly digest"}),
			h.createTask(t, cks.NewTask{Type: "batch", Title: "Other", Description: "not the nightly one"})}

		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.ID("filter-q")),
			chromedp.SendKeys(chromedp.ID("filter-q"), "NIGHTLY REPORT"),
			chromedp.Submit(chromedp.ID("filter-q")),
			waitVisible(chromedp.ID("bulk")))
		if loc := tb.location(); !strings.Contains(loc, "q=NIGHTLY+REPORT") {
			t.Errorf("the board's URL %q does not keep the search", loc)
		}
		// The bands fill as the board's live fragments arrive: wait for all
		// 21 (counted at the first paint, 19 once, on a CI run).
		if err := tb.poll(`document.querySelectorAll("#board [data-task-row]").length === 21`); err != nil {
			t.Errorf("the search lists %d tasks, want the 21 that match: %v",
				js[int](tb, `document.querySelectorAll("#board [data-task-row]").length`), err)
		}
		for _, o := range others {
			if js[bool](tb, fmt.Sprintf(`!!document.querySelector('[data-task-row="%d"]')`, o.ID)) {
				t.Errorf("task %d (%q) is listed; the search does not match it", o.ID, o.Title)
			}
		}

		// The form says how many match; the apply asks first, with the count.
		if got := tb.text(`#bulk [data-bulk-count]`); got != "21" {
			t.Errorf("the bulk form counts %q tasks matching the filter, want 21", got)
		}
		dl := tb.answerDialogs()
		tb.do(click(chromedp.CSS(`#bulk input[name=scope][value=filter]`)),
			chromedp.SetValue(chromedp.ID("bulk-action"), "stop"),
			chromedp.SendKeys(chromedp.ID("bulk-reason"), "hold the nightly run"),
			click(chromedp.CSS(`#bulk [data-bulk-button]`)))
		if msg := dl.wait(t, 1); !strings.HasPrefix(msg, "Stop 21 tasks matching the filter?") {
			t.Errorf("the bulk stop's confirmation says %q", msg)
		}
		tb.waitTrue("the outcomes of the bulk stop", `document.querySelectorAll("[data-bulk-outcome]").length === 21`)
		if got := tb.text(`[data-bulk-summary]`); !strings.Contains(got, "20 done, 1 refused") || !strings.Contains(got, "1 abort(s) pending") {
			t.Errorf("summary %q, want 20 done, 1 refused, 1 abort pending", got)
		}
		row := func(id int64) string { return tb.text(fmt.Sprintf(`[data-bulk-outcome="%d"]`, id)) }
		if got := row(running.ID); !strings.Contains(got, "CLAIMED") || !strings.Contains(got, "STOPPED") || !strings.Contains(got, "abort pending") {
			t.Errorf("the running task's outcome %q, want CLAIMED → STOPPED with its abort flagged", got)
		}
		if got := row(cancelled.ID); !strings.Contains(got, "refused") || !strings.Contains(got, "CANCELLED") {
			t.Errorf("the cancelled task's outcome %q, want refused, saying why", got)
		}
		for _, task := range batch {
			if got := h.getTask(t, task.ID); got.State != cks.TaskStopped {
				t.Errorf("task %d: %s after the bulk stop, want STOPPED", task.ID, got.State)
			}
		}
		for _, task := range append(others, cancelled) {
			if got := h.getTask(t, task.ID); got.State == cks.TaskStopped {
				t.Errorf("task %d (%q) was stopped; the filter does not select it", task.ID, task.Title)
			}
		}
	})
}

// TestBrowserRetryFailedTask: on both backends, a FAILED task's page offers
// Retry; clicking it opens the task again (OPEN, a fresh attempt budget,
// restarts counted) and the page shows it OPEN.
func TestBrowserRetryFailedTask(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		task := h.createTask(t, cks.NewTask{Type: "flaky", Title: "Fails once", MaxAttempts: 1})
		c := h.claimOne(t, "flaky")
		tok, _ := json.Marshal(c.LeaseToken)
		if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/fail", task.ID), `{"lease_token":`+string(tok)+`,"reason":"boom"}`); code != http.StatusOK {
			t.Fatalf("fail: %d %s", code, out)
		}
		h.waitTask(t, task.ID, "FAILED", func(t cks.Task) bool { return t.State == cks.TaskFailed })

		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, task.ID)),
			waitVisible(chromedp.CSS(`form[data-task-action=retry] button`)),
			click(chromedp.CSS(`form[data-task-action=retry] button`)))
		got := h.waitTask(t, task.ID, "retried", func(t cks.Task) bool { return t.State == cks.TaskOpen })
		if got.Restarts != 1 || got.Attempts != 0 {
			t.Errorf("retried: restarts %d attempts %d, want 1 and a fresh budget", got.Restarts, got.Attempts)
		}
		tb.waitTrue("the task page shows it OPEN", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "OPEN"`)
	})
}

// TestBrowserEditHistory: an edit of a task's criteria made on the task
// page's form shows in its edit history as the old line removed and the
// new one added, by the editor.
func TestBrowserEditHistory(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	task := h.createTask(t, cks.NewTask{Type: "doc", Title: "Edited", AcceptanceCriteria: "the old criteria"})
	tb := newTab(t, 0)
	tb.signIn(h, h.Token)
	tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, task.ID)),
		waitVisible(chromedp.ID("edit-history")),
		click(chromedp.CSS(`.task-edit summary`)),
		waitVisible(chromedp.ID("edit-acceptance_criteria")),
		chromedp.SetValue(chromedp.ID("edit-acceptance_criteria"), "the new criteria"))
	js[bool](tb, `document.getElementById("edit-acceptance_criteria").dispatchEvent(new Event("input", {bubbles: true}))`)
	tb.reloads(click(chromedp.CSS(`form[data-task-action=update] button`)))
	h.waitTask(t, task.ID, "edited", func(t cks.Task) bool { return t.AcceptanceCriteria == "the new criteria" })
	tb.waitTrue("the edit history shows the change",
		`document.readyState === "complete" && !!document.querySelector("#edit-history [data-revision] .diff__del") && document.querySelector("#edit-history [data-revision] .diff__del").textContent.includes("the old criteria")`)
	if got := tb.text(`#edit-history [data-revision] .diff__add`); !strings.Contains(got, "the new criteria") {
		t.Errorf("added line %q", got)
	}
	if got := tb.text(`#edit-history .revision__head`); !strings.Contains(got, "Acceptance criteria") || !strings.Contains(got, "changed by") {
		t.Errorf("revision head %q", got)
	}
}

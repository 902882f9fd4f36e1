package studio_test

// The review of a NEEDS_REVIEW task from its page (ADR 0020: an agent that
// decides its work needs review hands it to a reviewer): the form, its
// permission, and the approve and reject in real Chromium.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

// TestTaskPageOffersReview: on both backends, a NEEDS_REVIEW task's page
// offers the review form (a note, Approve and Reject) to a principal who
// may claim the review, and shows it disabled, naming the permission, to a
// reader; a task in any other state has no review form.
func TestTaskPageOffersReview(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		rev, _ := backendtest.Into(t, b, cks.TaskNeedsReview, "rev")
		run, _ := backendtest.Into(t, b, cks.TaskRunning, "run")
		acts := func(id int64, decorate func(*http.Request) *http.Request) string {
			r := getAs(t, h, fmt.Sprintf("/tasks/%d", id), decorate)
			wantHTML(t, r, http.StatusOK)
			return section(t, r.body, `id="actions-heading"`, `id="fields-heading"`)
		}
		op := acts(rev.ID, asOperator)
		mustContain(t, "NEEDS_REVIEW actions", op, `data-task-action="review"`, `name="note"`,
			`name="verdict" value="approve" data-task-action-button>Approve</button>`,
			`name="verdict" value="reject" data-task-action-button>Reject</button>`)
		mustNotContain(t, "NEEDS_REVIEW actions", op, "finished, nothing to stop")

		reader := as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead})
		ro := acts(rev.ID, reader)
		refusal := fmt.Sprintf(`disabled title="forbidden: principal &#34;viewer&#34; needs %s on /tasks/%d"`, auth.PermUpdate, rev.ID)
		mustContain(t, "reader's review", ro, `value="approve" data-task-action-button `+refusal, `value="reject" data-task-action-button `+refusal)

		mustNotContain(t, "RUNNING actions", acts(run.ID, asOperator), `data-task-action="review"`)
	})
}

// needsReview creates a task of typ and has an agent complete it with
// needs_review, through the API, and returns its id.
func (h consoleHub) needsReview(t testing.TB, typ, title string) int64 {
	t.Helper()
	task := h.createTask(t, cks.NewTask{Type: typ, Title: title})
	code, out := h.api(t, http.MethodPost, "/v1/tasks/claim", fmt.Sprintf(`{"types":[%q],"worker":"builder"}`, typ))
	var claimed cks.ClaimedTasks
	if err := json.Unmarshal([]byte(out), &claimed); code != http.StatusOK || err != nil || len(claimed.Tasks) != 1 {
		t.Fatalf("claim: %d %s %v", code, out, err)
	}
	tok, _ := json.Marshal(claimed.Tasks[0].LeaseToken)
	body := `{"lease_token":` + string(tok) + `,"needs_review":true,"result":"built it"}`
	if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/complete", task.ID), body); code != http.StatusOK {
		t.Fatalf("complete with needs_review: %d %s", code, out)
	}
	return task.ID
}

// TestBrowserReviewTask: on both backends, an operator approves one
// NEEDS_REVIEW task from its page with a note (COMPLETED, the note kept,
// the reviewer the signed-in principal) and rejects another (OPEN again,
// with the note for the next agent).
func TestBrowserReviewTask(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		good := h.needsReview(t, "build", "Good work")
		bad := h.needsReview(t, "build", "Wrong work")
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)

		decide := func(id int64, note, verdict string) {
			tb.do(
				chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, id)),
				waitVisible(chromedp.ID("review-note")),
				chromedp.SendKeys(chromedp.ID("review-note"), note),
				click(chromedp.CSS(fmt.Sprintf(`form[data-task-action=review] button[value=%s]`, verdict))),
			)
		}
		decide(good, "looks right", "approve")
		done := h.waitTask(t, good, "approved", func(t cks.Task) bool { return t.State == cks.TaskCompleted })
		if done.ReviewNote != "looks right" {
			t.Errorf("approved: review note %q", done.ReviewNote)
		}
		last := done.Events[len(done.Events)-1]
		if last.Actor != "admin" || !strings.Contains(last.Reason, "review approved: looks right") {
			t.Errorf("approved: last event %+v, want the admin's approval", last)
		}
		tb.waitTrue("the page shows it COMPLETED", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "COMPLETED" && !document.getElementById("review-note")`)

		decide(bad, "criteria not met", "reject")
		open := h.waitTask(t, bad, "rejected", func(t cks.Task) bool { return t.State == cks.TaskOpen })
		if open.ReviewNote != "criteria not met" {
			t.Errorf("rejected: review note %q", open.ReviewNote)
		}
		tb.waitTrue("the page shows it OPEN with the note", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "OPEN" && document.body.textContent.includes("criteria not met")`)
	})
}

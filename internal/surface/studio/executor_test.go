package studio_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/auth"
)

// unconfirmedStop has worker claim a task of typ and run it, stops it,
// and declares the abort unconfirmed, as a stop's deadline passing does.
func unconfirmedStop(t *testing.T, b *backend.Backend, typ, worker string) int64 {
	t.Helper()
	c := running(t, b, typ, "Runs away", worker)
	ab := stop(t, b, c.ID, "runaway")
	expire(t, b, c.ID, ab)
	return c.ID
}

// TestTaskPageOffersExecutorStop: on both backends, the task page of an
// unconfirmed abort whose executor is an agent process (kind/instance, as
// agents name themselves) offers to stop that process, disabled naming the
// permission for a principal without control on its kind; an executor
// that is no agent process gets no such button.
func TestTaskPageOffersExecutorStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		agent := unconfirmedStop(t, b, "agent", agents.ExecutorName("critic", "inst-0000-1111-2222"))
		other := unconfirmedStop(t, b, "other", "worker-gone")
		page := func(id int64, decorate func(*http.Request) *http.Request) string {
			r := getAs(t, h, fmt.Sprintf("/tasks/%d", id), decorate)
			wantHTML(t, r, http.StatusOK)
			return r.body
		}
		p := page(agent, asOperator)
		mustContain(t, "the agent's abort", p, `data-executor="inst-0000-1111-2222"`, "<strong>critic</strong> agent process",
			`data-executor-stop="inst-0000-1111-2222">Stop process inst-000…</button>`)
		reader := as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead})
		mustContain(t, "a reader's view of the agent's abort", page(agent, reader),
			`data-executor-stop="inst-0000-1111-2222" disabled title="forbidden: principal &#34;viewer&#34; needs control on /processes/critic"`)
		o := page(other, asOperator)
		mustContain(t, "another executor's abort", o, "Abort unconfirmed.", "<code>worker-gone</code>")
		mustNotContain(t, "another executor's abort", o, "data-executor-stop")
	})
}

// TestBrowserStopExecutorOfUnconfirmedAbort: on both backends, a task held
// by a real agent process's executor name is stopped with an abort nobody
// confirms (abort_unconfirmed); from the task page's notice the operator
// stops that agent process, which exits.
func TestBrowserStopExecutorOfUnconfirmedAbort(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		id, exited := startAgent(t, h, "critic")
		task := h.createTask(t, cks.NewTask{Type: "build", Title: "Held by a critic that went quiet"})
		code, out := h.api(t, http.MethodPost, "/v1/tasks/claim",
			fmt.Sprintf(`{"types":["build"],"worker":%q}`, agents.ExecutorName("critic", id)))
		if code != http.StatusOK || !strings.Contains(out, `"task_id":`) {
			t.Fatalf("claim: %d %s", code, out)
		}
		code, out = h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", task.ID), `{"reason":"runaway","deadline":"1ms"}`)
		var res cks.TaskStopResult
		if err := json.Unmarshal([]byte(out), &res); code != http.StatusOK || err != nil || res.Abort == nil || res.Abort.Outcome != cks.AbortUnconfirmed {
			t.Fatalf("stop: %d %s %v", code, out, err)
		}
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		btn := fmt.Sprintf(`[data-executor-stop=%q]`, id)
		dl := tb.answerDialogs()
		tb.do(
			chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, task.ID)),
			waitVisible(chromedp.CSS(btn)),
			click(chromedp.CSS(btn)),
		)
		if msg := dl.wait(t, 1); !strings.Contains(msg, "Stop the agent process "+id+"?") {
			t.Errorf("the stop's confirmation says %q", msg)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("agent exited with %v", err)
			}
		case <-time.After(browserWait):
			t.Fatal("the agent did not exit within " + browserWait.String() + " of the click")
		}
		if got := tb.text(`[data-executor-outcome]`); !strings.Contains(got, "Asked to stop") {
			t.Errorf("outcome %q", got)
		}
	})
}

package studio_test

// Browser tests of the task board and the task page: the board follows the
// hub's events, the inbox is worked from the browser, and a running task
// is edited and stopped in front of a real exec agent.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
)

// createTask creates a task through the API (create_task) and returns it.
func (h consoleHub) createTask(t testing.TB, n cks.NewTask) cks.Task {
	t.Helper()
	body, _ := json.Marshal(n)
	code, out := h.api(t, http.MethodPost, "/v1/tasks", string(body))
	var c cks.CreatedTask
	if err := json.Unmarshal([]byte(out), &c); code != http.StatusCreated || err != nil {
		t.Fatalf("create_task: %d %s %v", code, out, err)
	}
	return c.Task
}

// getTask reads task id through the API (get_task).
func (h consoleHub) getTask(t testing.TB, id int64) cks.Task {
	t.Helper()
	code, out := h.api(t, http.MethodGet, fmt.Sprintf("/v1/tasks/%d", id), "")
	var task cks.Task
	if err := json.Unmarshal([]byte(out), &task); code != http.StatusOK || err != nil {
		t.Fatalf("get_task %d: %d %s %v", id, code, out, err)
	}
	return task
}

// waitTask waits, within browserWait, until task id satisfies ok.
func (h consoleHub) waitTask(t testing.TB, id int64, what string, ok func(cks.Task) bool) cks.Task {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		task := h.getTask(t, id)
		if ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d: not %s within %s: %+v", id, what, browserWait, task)
		}
		<-tick.C
	}
}

// TestBrowserBoardFollowsTasks: on both backends, a task created while the
// board is open appears on it without a reload, the counts change, and a
// stop moves its row into the STOPPED band on top.
func TestBrowserBoardFollowsTasks(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.ID("live-heading")))
		tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
		js[bool](tb, `window.cksNoReload = true`)

		task := h.createTask(t, cks.NewTask{Type: "build", Title: "Appears live"})
		row := fmt.Sprintf(`[data-task-row="%d"]`, task.ID)
		tb.waitTrue("the new task's row in the live work", fmt.Sprintf(`!!document.querySelector("#live-work %s")`, strings.ReplaceAll(row, `"`, `\"`)))
		tb.waitTrue("the OPEN chip counts 1", `[...document.querySelectorAll(".chip--open .chip__n")].some(e => e.textContent === "1")`)

		code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", task.ID), `{"reason":"held from the test"}`)
		if code != http.StatusOK {
			t.Fatalf("stop: %d %s", code, out)
		}
		tb.waitTrue("the row in the STOPPED band", fmt.Sprintf(`!!document.querySelector(".board-stopped %s")`, strings.ReplaceAll(row, `"`, `\"`)))
		if js[bool](tb, fmt.Sprintf(`!!document.querySelector("#live-work %s")`, strings.ReplaceAll(row, `"`, `\"`))) {
			t.Error("the stopped task is still listed as live work")
		}
		if !js[bool](tb, `window.cksNoReload === true`) {
			t.Error("the board reloaded; it should follow the tasks live")
		}
	})
}

// TestBrowserAnswerFromInbox: a task an executor parked with a question is
// in the board's inbox; the operator opens it from there, answers in the
// form, and the task leaves the inbox (OPEN again, with the answer).
func TestBrowserAnswerFromInbox(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	task := h.createTask(t, cks.NewTask{Type: "ask", Title: "Which colour?"})
	code, out := h.api(t, http.MethodPost, "/v1/tasks/claim", `{"types":["ask"],"worker":"asker"}`)
	var claimed cks.ClaimedTasks
	if err := json.Unmarshal([]byte(out), &claimed); code != http.StatusOK || err != nil || len(claimed.Tasks) != 1 {
		t.Fatalf("claim: %d %s %v", code, out, err)
	}
	tok, _ := json.Marshal(claimed.Tasks[0].LeaseToken)
	body := `{"lease_token":` + string(tok) + `,"question":"Red or blue?"}`
	if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/request-input", task.ID), body); code != http.StatusOK {
		t.Fatalf("request_input: %d %s", code, out)
	}

	tb := newTab(t, 0)
	tb.signIn(h, h.Token)
	link := fmt.Sprintf(`#inbox a[href="/tasks/%d"]`, task.ID)
	tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.CSS(link)))
	if got := tb.text(`#inbox .question`); !strings.Contains(got, "Red or blue?") {
		t.Errorf("inbox question %q", got)
	}
	tb.do(
		click(chromedp.CSS(link)),
		waitVisible(chromedp.ID("answer-text")),
		chromedp.SendKeys(chromedp.ID("answer-text"), "Blue."),
		click(chromedp.CSS(`form[data-task-action=answer] button`)),
	)
	h.waitTask(t, task.ID, "answered", func(t cks.Task) bool { return t.State == cks.TaskOpen && t.Answer == "Blue." })
	tb.waitTrue("the task page shows it OPEN", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "OPEN" && !document.getElementById("answer-text")`)
	tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.ID("inbox-heading")))
	if js[bool](tb, fmt.Sprintf(`!!document.querySelector(%q)`, link)) {
		t.Error("the answered task is still in the inbox")
	}
	if got := tb.text(`#inbox .note`); !strings.Contains(got, "No task is waiting") {
		t.Errorf("inbox note %q", got)
	}
}

// startExecAgent runs an exec agent claiming tasks of typ over a second
// handle on h's database; its command writes the task it got on stdin to
// dir/stdin-RESTART.json and then works until it is aborted.
func startExecAgent(t testing.TB, h consoleHub, typ, dir string) {
	t.Helper()
	runExecAgent(t, h, typ, "sh", "-c",
		`cat > "`+dir+`/stdin-$CKS_TASK_RESTART.json.part" && mv "`+dir+`/stdin-$CKS_TASK_RESTART.json.part" "`+dir+`/stdin-$CKS_TASK_RESTART.json"; exec sleep 60`)
}

// waitFile waits, within browserWait, for path to exist and returns it.
func waitFile(t testing.TB, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not written within %s", filepath.Base(path), browserWait)
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes: no event to wait on
	}
}

// TestBrowserEditAndStopRunningTask: on both backends, with a real exec
// agent working a task: the edit form says before submitting that a
// criteria change is material (stop, apply, restart) and a priority change
// live; saving the criteria restarts the attempt and the agent's next
// stdin carries the new revision; then, opened from the board, the task is
// stopped with a reason and the page shows the abort confirmed without a
// reload.
func TestBrowserEditAndStopRunningTask(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		dir := t.TempDir()
		task := h.createTask(t, cks.NewTask{Type: "work-" + backendName, Title: "Long work", AcceptanceCriteria: "the old criteria"})
		startExecAgent(t, h, "work-"+backendName, dir)
		var first cks.Task
		if err := json.Unmarshal(waitFile(t, filepath.Join(dir, "stdin-0.json")), &first); err != nil || first.AcceptanceCriteria != "the old criteria" {
			t.Fatalf("first stdin: %+v, %v", first, err)
		}
		h.waitTask(t, task.ID, "RUNNING", func(t cks.Task) bool { return t.State == cks.TaskRunning })

		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, task.ID)),
			click(chromedp.CSS(`.task-edit summary`)),
			waitVisible(chromedp.ID("edit-priority")),
			chromedp.SetValue(chromedp.ID("edit-priority"), "3"),
		)
		js[bool](tb, `document.getElementById("edit-priority").dispatchEvent(new Event("input", {bubbles: true}))`)
		if got := tb.text(`[data-edit-kind]`); !strings.HasPrefix(got, "Live edit") {
			t.Errorf("priority edit announced as %q, want a live edit", got)
		}
		tb.do(chromedp.SetValue(chromedp.ID("edit-priority"), "0"),
			chromedp.SetValue(chromedp.ID("edit-acceptance_criteria"), "the new criteria"))
		js[bool](tb, `document.getElementById("edit-acceptance_criteria").dispatchEvent(new Event("input", {bubbles: true}))`)
		if got := tb.text(`[data-edit-kind]`); !strings.Contains(got, "Material edit") || !strings.Contains(got, "restarted") {
			t.Errorf("criteria edit announced as %q, want material: stop, apply, restart", got)
		}
		tb.do(click(chromedp.CSS(`form[data-task-action=update] button`)))
		var second cks.Task
		if err := json.Unmarshal(waitFile(t, filepath.Join(dir, "stdin-1.json")), &second); err != nil {
			t.Fatal(err)
		}
		if second.AcceptanceCriteria != "the new criteria" || second.Revision <= first.Revision {
			t.Errorf("the restarted attempt's stdin: criteria %q revision %d, want the new criteria past revision %d",
				second.AcceptanceCriteria, second.Revision, first.Revision)
		}
		h.waitTask(t, task.ID, "RUNNING again", func(t cks.Task) bool { return t.State == cks.TaskRunning && t.Restarts == 1 })

		// Stop it, from the board.
		tb.do(chromedp.Navigate(h.URL+"/tasks"),
			click(chromedp.CSS(fmt.Sprintf(`#live-work a[href="/tasks/%d"]`, task.ID))),
			waitVisible(chromedp.ID("stop-reason")),
			chromedp.SendKeys(chromedp.ID("stop-reason"), "operator hold"),
			click(chromedp.CSS(`form[data-task-action=stop] button`)),
		)
		tb.waitTrue("the page shows the stop's abort confirmed", `[...document.querySelectorAll(".aborts tbody tr")].some(r => r.textContent.includes("operator hold") && r.querySelector(".badge").textContent === "abort_confirmed")`)
		if got := h.getTask(t, task.ID); got.State != cks.TaskStopped || got.LastAbort == nil || got.LastAbort.Outcome != cks.AbortConfirmed {
			t.Errorf("after the stop: %s, abort %+v", got.State, got.LastAbort)
		}
	})
}

// TestBrowserTaskOutputPane: on both backends, the task page's log pane
// shows a real exec agent's command output while the command still runs
// (its stderr marked), then the rest and the attempt's end, without a
// reload.
func TestBrowserTaskOutputPane(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		dir := t.TempDir()
		typ := "logs-" + backendName
		task := h.createTask(t, cks.NewTask{Type: typ, Title: "Prints as it goes"})
		runExecAgent(t, h, typ, "sh", "-c",
			`echo "step 1"; echo "careful" >&2; while [ ! -e "`+dir+`/go" ]; do sleep 0.02; done; echo "step 2"`)
		h.waitTask(t, task.ID, "RUNNING", func(t cks.Task) bool { return t.State == cks.TaskRunning })
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, task.ID)))
		tb.waitTrue("the pane shows the first lines", `(() => { const l = document.querySelector("[data-output-log]");
			return l.textContent.includes("step 1\n") && [...l.querySelectorAll(".output__stderr")].some(s => s.textContent === "careful\n"); })()`)
		if got := h.getTask(t, task.ID); got.State != cks.TaskRunning {
			t.Fatalf("the task is %s while the pane shows its first lines", got.State)
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// stdout and stderr are two pipes: their lines may interleave either way.
		tb.waitTrue("the pane shows the rest and the end", `(() => { const l = document.querySelector("[data-output-log]").textContent;
			return document.querySelector("[data-output]").dataset.outputEnded === "COMPLETED" && l.endsWith("step 2\n") &&
				l.length === "step 1\ncareful\nstep 2\n".length && l.includes("step 1\n") && l.includes("careful\n"); })()`)
	})
}

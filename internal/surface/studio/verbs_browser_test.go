package studio_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
)

// TestBrowserTaskLifecycleFromForms: on both backends, every remaining
// task verb is worked from the pages alone: a task created in the new-task
// form, stopped from its page with a reason (STOPPED, the reason in its
// history), started (OPEN, restarts 1, attempts untouched) and cancelled
// with a reason (CANCELLED).
func TestBrowserTaskLifecycleFromForms(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(
			chromedp.Navigate(h.URL+"/tasks/new"),
			waitVisible(chromedp.ID("new-type")),
			chromedp.SendKeys(chromedp.ID("new-type"), "deploy"),
			chromedp.SendKeys(chromedp.ID("new-title"), "Roll out the fix"),
			chromedp.SendKeys(chromedp.ID("new-criteria"), "all hosts on the new build"),
			click(chromedp.CSS(`form[data-task-action=create] [data-task-action-button]`)),
			waitVisible(chromedp.ID("stop-reason")),
		)
		loc := tb.location()
		id, err := strconv.ParseInt(loc[strings.LastIndex(loc, "/")+1:], 10, 64)
		if err != nil {
			t.Fatalf("after create the browser is at %s", loc)
		}
		created := h.getTask(t, id)
		if created.Type != "deploy" || created.Title != "Roll out the fix" || created.AcceptanceCriteria != "all hosts on the new build" ||
			created.State != cks.TaskOpen || created.CreatedBy != "admin" {
			t.Fatalf("created: %+v", created)
		}

		tb.reloads(
			chromedp.SendKeys(chromedp.ID("stop-reason"), "freeze window"),
			click(chromedp.CSS(`form[data-task-action=stop] button`)),
		)
		stopped := h.waitTask(t, id, "stopped", func(t cks.Task) bool { return t.State == cks.TaskStopped })
		if last := stopped.Events[len(stopped.Events)-1]; last.Reason != "stopped: freeze window" || last.Actor != "admin" {
			t.Errorf("stop event %+v", last)
		}
		tb.waitTrue("the Start button", `document.readyState === "complete" && !!document.querySelector("form[data-task-action=start] button")`)
		tb.reloads(click(chromedp.CSS(`form[data-task-action=start] button`)))
		started := h.waitTask(t, id, "started", func(t cks.Task) bool { return t.State == cks.TaskOpen })
		if started.Restarts != 1 || started.Attempts != 0 {
			t.Errorf("started: restarts %d attempts %d, want 1 and 0", started.Restarts, started.Attempts)
		}
		tb.waitTrue("the Cancel form", `document.readyState === "complete" && !!document.getElementById("cancel-reason") && document.querySelector("h1 .state").textContent === "OPEN"`)
		// Cancel asks first; a dismissed question sends nothing.
		dl := tb.answerDialogs()
		dl.setAccept(false)
		tb.do(
			chromedp.SendKeys(chromedp.ID("cancel-reason"), "superseded"),
			click(chromedp.CSS(`form[data-task-action=cancel] button`)),
		)
		if msg := dl.wait(t, 1); !strings.Contains(msg, fmt.Sprintf("Cancel task #%d?", id)) {
			t.Errorf("the cancel confirmation says %q", msg)
		}
		if !js[bool](tb, `(() => { const b = document.querySelector("form[data-task-action=cancel] button"); return !!b && !b.disabled && b.textContent === "Cancel task"; })()`) {
			t.Fatal("a dismissed cancel was sent anyway")
		}
		dl.setAccept(true)
		tb.reloads(click(chromedp.CSS(`form[data-task-action=cancel] button`)))
		dl.wait(t, 2)
		h.waitTask(t, id, "cancelled", func(t cks.Task) bool { return t.State == cks.TaskCancelled && t.LastError == "superseded" })
		tb.waitTrue("the page shows it CANCELLED", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "CANCELLED"`)
	})
}

// TestBrowserSweeperStopAndStart: on both backends, Stop on a sweeper's
// card stops it with the override stored (list_agents reads it stopped,
// desired_running false, as a restarted hub would start it), and Start
// starts it again with the override start.
func TestBrowserSweeperStopAndStart(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		status := func() cks.SweeperStatus {
			code, out := h.api(t, http.MethodGet, "/v1/sweepers/stale_stop_report", "")
			var st cks.SweeperStatus
			if err := json.Unmarshal([]byte(out), &st); code != http.StatusOK || err != nil {
				t.Fatalf("agent_status: %d %s %v", code, out, err)
			}
			return st
		}
		btn := func(action string) string {
			return `[data-sweeper="stale_stop_report"][data-sweeper-action="` + action + `"]`
		}
		tb.do(waitVisible(chromedp.CSS(btn("stop"))), click(chromedp.CSS(btn("stop"))))
		tb.waitTrue("the card offers Start", `!!document.querySelector('`+btn("start")+`')`)
		if st := status(); st.Running || st.DesiredRunning == nil || *st.DesiredRunning {
			t.Errorf("after Stop: running %v, desired_running %v", st.Running, st.DesiredRunning)
		}
		tb.do(click(chromedp.CSS(btn("start"))))
		tb.waitTrue("the card offers Stop", `!!document.querySelector('`+btn("stop")+`')`)
		if st := status(); !st.Running || st.DesiredRunning == nil || !*st.DesiredRunning {
			t.Errorf("after Start: running %v, desired_running %v", st.Running, st.DesiredRunning)
		}
	})
}

// TestBrowserAddDependencyThenStart: on both backends, ADR 0020 §4 from the
// pages: a STOPPED task edited in the form to depend on an unfinished task
// (a material edit: its revision goes up) comes back WAITING when started,
// not claimable; an id that is no task is the hub's refusal naming the
// field, and changes nothing.
func TestBrowserAddDependencyThenStart(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		dep := h.createTask(t, cks.NewTask{Type: "build", Title: "Build the new image"})
		task := h.createTask(t, cks.NewTask{Type: "deploy", Title: "Deploy it"})
		if code, out := h.api(t, http.MethodPost, "/v1/tasks/"+strconv.FormatInt(task.ID, 10)+"/stop", `{"reason":"wait for the image"}`); code != http.StatusOK {
			t.Fatalf("stop: %d %s", code, out)
		}
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(
			chromedp.Navigate(h.URL+"/tasks/"+strconv.FormatInt(task.ID, 10)),
			waitVisible(chromedp.CSS(`details.task-edit summary`)),
			click(chromedp.CSS(`details.task-edit summary`)),
			chromedp.SendKeys(chromedp.ID("edit-add_depends_on"), "999999"),
		)
		if got := tb.text(`[data-edit-kind]`); !strings.Contains(got, "Material edit") {
			t.Errorf("edit kind before saving: %q", got)
		}
		tb.do(click(chromedp.CSS(`form[data-task-action=update] [data-task-action-button]`)))
		tb.waitTrue("the refusal", `!document.querySelector("[data-action-error]").hidden`)
		if got := tb.text(`[data-action-error]`); !strings.Contains(got, "add_depends_on") {
			t.Errorf("refusal of an unknown dependency: %q", got)
		}
		if got := h.getTask(t, task.ID); got.Revision != task.Revision || len(got.DependsOn) != 0 {
			t.Fatalf("a refused edit changed the task: %+v", got)
		}
		tb.reloads(
			chromedp.SetValue(chromedp.ID("edit-add_depends_on"), strconv.FormatInt(dep.ID, 10)),
			click(chromedp.CSS(`form[data-task-action=update] [data-task-action-button]`)),
		)
		edited := h.waitTask(t, task.ID, "edited", func(t cks.Task) bool { return len(t.DependsOn) == 1 })
		if edited.DependsOn[0] != dep.ID || edited.Revision != task.Revision+1 || edited.State != cks.TaskStopped {
			t.Fatalf("edited: %+v", edited)
		}
		tb.waitTrue("the Start button", `document.readyState === "complete" && !!document.querySelector("form[data-task-action=start] button")`)
		tb.reloads(click(chromedp.CSS(`form[data-task-action=start] button`)))
		h.waitTask(t, task.ID, "started", func(t cks.Task) bool { return t.State == cks.TaskWaiting })
		tb.waitTrue("the page shows it WAITING", `document.readyState === "complete" && document.querySelector("h1 .state").textContent === "WAITING"`)
	})
}

// TestBrowserCreateAndEditARealTask: on both backends, the New task form
// makes a task with everything an agent needs — payload, dependencies,
// max attempts, dedupe key, metadata — a payload that is not JSON is
// refused in the page naming the field (nothing is created), and the task
// page's edit form changes the payload.
func TestBrowserCreateAndEditARealTask(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		dep := h.createTask(t, cks.NewTask{Type: "prep", Title: "Prepare"})
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(
			chromedp.Navigate(h.URL+"/tasks/new"),
			waitVisible(chromedp.ID("new-type")),
			chromedp.SendKeys(chromedp.ID("new-type"), "build"),
			chromedp.SendKeys(chromedp.ID("new-title"), "Build the docs"),
			chromedp.SendKeys(chromedp.ID("new-payload"), `{"target": "docs`),
			click(chromedp.CSS(`form[data-task-action=create] [data-task-action-button]`)),
		)
		if got := tb.text(`form[data-task-action=create] [data-action-error]`); !strings.Contains(got, "invalid payload: expected JSON") {
			t.Errorf("a payload that is not JSON: the form says %q", got)
		}
		if code, out := h.api(t, http.MethodGet, "/v1/tasks?type=build", ""); code != http.StatusOK || strings.Contains(out, `"task_id"`) {
			t.Fatalf("a refused form created a task: %d %s", code, out)
		}
		tb.do(
			chromedp.SendKeys(chromedp.ID("new-payload"), `"}`),
			chromedp.SendKeys(chromedp.ID("new-depends-on"), fmt.Sprint(dep.ID)),
			chromedp.SendKeys(chromedp.ID("new-max-attempts"), "5"),
			chromedp.SendKeys(chromedp.ID("new-dedupe-key"), "docs-build"),
			chromedp.SendKeys(chromedp.ID("new-metadata"), `{"owner": "ops"}`),
			click(chromedp.CSS(`form[data-task-action=create] [data-task-action-button]`)),
			waitVisible(chromedp.ID("actions-heading")),
		)
		loc := tb.location()
		id, err := strconv.ParseInt(loc[strings.LastIndex(loc, "/")+1:], 10, 64)
		if err != nil {
			t.Fatalf("after create the browser is at %s", loc)
		}
		got := h.getTask(t, id)
		if got.Type != "build" || string(got.Payload) != `{"target":"docs"}` || len(got.DependsOn) != 1 || got.DependsOn[0] != dep.ID ||
			got.MaxAttempts != 5 || got.DedupeKey != "docs-build" || string(got.Metadata) != `{"owner":"ops"}` || got.State != cks.TaskWaiting {
			t.Fatalf("created: %+v, payload %s, metadata %s", got, got.Payload, got.Metadata)
		}

		tb.do(
			click(chromedp.CSS(`details.task-edit summary`)),
			waitVisible(chromedp.ID("edit-payload")),
			chromedp.SetValue(chromedp.ID("edit-payload"), `{"target": "site"}`),
			click(chromedp.CSS(`form[data-task-action=update] [data-task-action-button]`)),
		)
		edited := h.waitTask(t, id, "with the new payload", func(t cks.Task) bool { return string(t.Payload) == `{"target":"site"}` })
		if edited.Revision != 2 {
			t.Errorf("revision %d after a payload edit, want 2 (a material edit)", edited.Revision)
		}
	})
}

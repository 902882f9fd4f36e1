package studio_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// taskStudio is a studio over b's task ledger, read as the local operator
// (get's asOperator).
func taskStudio(b *backend.Backend) http.Handler {
	return studio.New(&ops.Services{Tasks: b.Tasks, Principals: b.Principals}, studio.Options{Version: "v-test"})
}

// TestBoardFilters: on both backends, the board filters through list_tasks
// by several states (?state=OPEN,STOPPED, or the parameter repeated), by
// type, by stopped_longer_than, pages with after keeping the filter, and
// refuses a parameter it does not read by name (a 400, never ignored) and a
// state list_tasks refuses in its words.
func TestBoardFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		held, _ := backendtest.Into(t, b, cks.TaskStopped, "build")
		done, _ := backendtest.Into(t, b, cks.TaskCompleted, "build")
		open := enqueue(t, b, "build", "Open build")
		review := enqueue(t, b, "review", "Open review")
		row := func(id int64) string { return fmt.Sprintf(`data-task-row="%d"`, id) }

		for _, tc := range []struct {
			name, query string
			want, not   []int64
			count       int
		}{
			{"two states, one parameter", "state=OPEN,STOPPED", []int64{open.ID, review.ID, held.ID}, []int64{done.ID}, 3},
			{"two states, repeated, lower case", "state=open&state=stopped", []int64{open.ID, review.ID, held.ID}, []int64{done.ID}, 3},
			{"type", "type=review", []int64{review.ID}, []int64{open.ID, held.ID, done.ID}, 1},
			{"state and type", "state=OPEN,COMPLETED&type=build", []int64{open.ID, done.ID}, []int64{review.ID, held.ID}, 2},
			{"stopped longer than", "stopped_longer_than=0s", []int64{held.ID}, []int64{open.ID, review.ID, done.ID}, 1},
			{"search text", "q=OPEN+BUILD", []int64{open.ID}, []int64{review.ID, held.ID, done.ID}, 1},
			{"search text and state", "q=open&state=OPEN&sort=priority", []int64{open.ID, review.ID}, []int64{held.ID, done.ID}, 2},
			{"created by", "created_by=nobody", nil, []int64{open.ID, review.ID, held.ID, done.ID}, 0},
			{"abort not confirmed", "unconfirmed_abort=1", nil, []int64{open.ID, review.ID, done.ID}, -1},
		} {
			for _, path := range []string{"/tasks?", studio.BoardFragmentPath + "?"} {
				r := get(t, h, path+tc.query)
				if r.status != http.StatusOK {
					t.Fatalf("%s %s: %d\n%s", tc.name, path, r.status, r.body)
				}
				for _, id := range tc.want {
					mustContain(t, tc.name, r.body, row(id))
				}
				for _, id := range tc.not {
					mustNotContain(t, tc.name, r.body, row(id))
				}
				if tc.count >= 0 {
					mustContain(t, tc.name, r.body, fmt.Sprintf(`<span class="count" data-count="filtered">%d</span>`, tc.count))
				}
				if strings.HasPrefix(path, studio.BoardFragmentPath) {
					if r.header.Get("X-Studio-Fragment") != "tasks" {
						t.Errorf("%s: fragment header %q", tc.name, r.header.Get("X-Studio-Fragment"))
					}
					mustNotContain(t, tc.name+" fragment", r.body, "<html", `class="board-filter"`)
				} else {
					mustContain(t, tc.name+" page", r.body, `id="live"`, `data-live-events="tasks"`, `data-live-kind="tasks"`, `class="board-filter"`)
				}
			}
		}
		// The chips count what the search selects, per state, and keep it.
		mustContain(t, "chips under a search", get(t, h, "/tasks?q=review").body,
			`href="/tasks?state=OPEN&amp;q=review">OPEN <span class="chip__n">1</span>`,
			`href="/tasks?state=COMPLETED&amp;q=review">COMPLETED <span class="chip__n">0</span>`)
		// The form shows the filter it lists; the URL keeps it (shareable).
		mustContain(t, "search form", get(t, h, "/tasks?q=build&created_by=op&unconfirmed_abort=1&sort=priority").body,
			`name="q" type="search" value="build"`, `name="created_by" type="text" value="op"`,
			`name="unconfirmed_abort" value="1" checked`, `<option value="priority" selected>`,
			`data-live-fragment="/studio/tasks?created_by=op&amp;q=build&amp;sort=priority&amp;unconfirmed_abort=1"`)
		// The page's fragment URL keeps its filter.
		mustContain(t, "filtered page", get(t, h, "/tasks?state=OPEN,STOPPED&type=build").body,
			`data-live-fragment="/studio/tasks?state=OPEN%2CSTOPPED&amp;type=build"`)

		for _, tc := range []struct{ query, want string }{
			{"q=build&order=age", "The board has no filter order"},
			{"q=build&sort=age", "sort: expected one of"},
			{"sort=updated&after=3", "cursor_key"},
			{"unconfirmed_abort=maybe", "unconfirmed_abort=&#34;maybe&#34;"},
			{"state=OPEN&bogus=1", "The board has no filter bogus"},
			{"state=DONE", `state: expected one of`},
			{"stopped_longer_than=soon", `stopped_longer_than`},
			{"after=x", `after=&#34;x&#34; is not a task id`},
		} {
			for _, path := range []string{"/tasks?", studio.BoardFragmentPath + "?"} {
				r := get(t, h, path+tc.query)
				if r.status != http.StatusBadRequest {
					t.Errorf("%s%s: %d, want 400", path, tc.query, r.status)
				}
				mustContain(t, path+tc.query, r.body, tc.want)
			}
		}
	})
}

// TestBoardPagesAFilter: a filtered list shows at most a page and links the
// next with the filter kept.
func TestBoardPagesAFilter(t *testing.T) {
	e := newFullEnv(t)
	var ids []int64
	for i := range studio.BoardCap + 3 {
		ids = append(ids, enqueue(t, e.store, "bulk", fmt.Sprintf("bulk %d", i)).ID)
	}
	first := get(t, e.h, "/tasks?state=OPEN,STOPPED&type=bulk")
	if n := strings.Count(first.body, "data-task-row="); n != studio.BoardCap {
		t.Errorf("first page %d rows, want %d", n, studio.BoardCap)
	}
	// Newest first: the next page is the 3 oldest.
	next := fmt.Sprintf(`href="/tasks?after=%d&amp;state=OPEN%%2CSTOPPED&amp;type=bulk"`, ids[3])
	mustContain(t, "first page", first.body, next, "Next page →")
	second := get(t, e.h, fmt.Sprintf("/tasks?after=%d&state=OPEN,STOPPED&type=bulk", ids[3]))
	if n := strings.Count(second.body, "data-task-row="); n != 3 {
		t.Errorf("second page %d rows, want 3", n)
	}
	// The default board's live-work list pages on too.
	mustContain(t, "board", get(t, e.h, "/tasks").body, fmt.Sprintf("after=%d&amp;state=OPEN%%2C", ids[3]))
}

// TestTaskPageVerbs: on both backends, the task page offers the verbs the
// task admits (get_task's actions): a NEEDS_INPUT task the answer form and
// an edit form whose material fields are disabled with the reason; a
// RUNNING one stop with a deadline, cancel, and an edit form that marks
// description and criteria material, title and priority live; a STOPPED
// one start, and no "Claimed" time beside "nobody"; a finished one none.
// The live part is served alone at /studio/tasks/{id}.
func TestTaskPageVerbs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		asking, _ := backendtest.Into(t, b, cks.TaskNeedsInput, "ask")
		run, _ := backendtest.Into(t, b, cks.TaskRunning, "run")
		held := running(t, b, "held", "Held", "worker-1")
		stop(t, b, held.ID, "hold it")
		done, _ := backendtest.Into(t, b, cks.TaskCompleted, "done")
		page := func(id int64) string {
			r := get(t, h, fmt.Sprintf("/tasks/%d", id))
			wantHTML(t, r, http.StatusOK)
			return section(t, r.body, `id="actions-heading"`, `id="fields-heading"`)
		}
		a := page(asking.ID)
		mustContain(t, "NEEDS_INPUT actions", a, `data-task-action="answer"`, `name="text"`, `data-task-action="cancel"`,
			`data-task-action="update"`, `data-material-ok="false"`,
			`name="acceptance_criteria" rows="4" data-material="true" disabled title="a material edit needs the task stopped first"`,
			`name="title" type="text" value="NEEDS_INPUT" data-material="false"`)
		r := page(run.ID)
		mustContain(t, "RUNNING actions", r, `data-task-action="stop"`, `name="deadline"`, `data-task-action="cancel"`,
			`data-leased="true" data-material-ok="true"`, `name="acceptance_criteria" rows="4" data-material="true">`,
			`name="priority" type="number" value="0" data-material="false"`, fmt.Sprintf(`href="/tasks/new?parent=%d"`, run.ID))
		mustNotContain(t, "RUNNING actions", r, `data-task-action="answer"`, `data-task-action="start"`)
		s := page(held.ID)
		mustContain(t, "STOPPED actions", s, `data-task-action="start"`)
		mustNotContain(t, "STOPPED actions", s, `data-task-action="stop"`, `name="deadline"`)
		sp := get(t, h, fmt.Sprintf("/tasks/%d", held.ID)).body
		mustContain(t, "STOPPED page", sp, "no executor: held by an operator", "<dt>Last claimed</dt>")
		mustNotContain(t, "STOPPED page", sp, `<span class="idle">nobody</span>`, "<dt>Claimed</dt>")
		mustContain(t, "RUNNING page", get(t, h, fmt.Sprintf("/tasks/%d", run.ID)).body, "<dt>Claimed</dt>")
		d := page(done.ID)
		mustContain(t, "COMPLETED actions", d, "finished, nothing to stop, start or cancel")
		mustNotContain(t, "COMPLETED actions", d, `data-task-action="`)

		f := get(t, h, fmt.Sprintf("%s/%d", studio.BoardFragmentPath, run.ID))
		if f.status != http.StatusOK || f.header.Get("X-Studio-Fragment") != "task" {
			t.Fatalf("task fragment: %d %q", f.status, f.header.Get("X-Studio-Fragment"))
		}
		mustContain(t, "task fragment", f.body, `data-task-actions=`, `id="events-heading"`, "RUNNING")
		mustNotContain(t, "task fragment", f.body, "<html", `class="crumbs"`)
	})
}

// TestNewTaskForm: the create form, for a child task with its parent; a
// bad parent or an unknown parameter is a 400 naming it.
func TestNewTaskForm(t *testing.T) {
	e := newFullEnv(t)
	r := get(t, e.h, "/tasks/new?parent=7")
	wantHTML(t, r, http.StatusOK)
	mustContain(t, "new child", r.body, `data-task-action="create"`, `name="type"`, `name="title"`, `name="acceptance_criteria"`,
		`<input type="hidden" name="parent_id" value="7">`, "New child task of #7")
	mustContain(t, "new task", get(t, e.h, "/tasks/new").body, "<h1>New task</h1>")
	for q, want := range map[string]string{"parent=x": `parent=&#34;x&#34; is not a task id`, "type=build": "takes only parent, not type"} {
		r := get(t, e.h, "/tasks/new?"+q)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, r.status)
		}
		mustContain(t, q, r.body, want)
	}
}

// TestTaskPageHonoursPermissions: on both backends, a viewer who may only
// read sees the verbs the task admits disabled, each with the permission
// it lacks, and no link to create a task; the operator sees them enabled.
func TestTaskPageHonoursPermissions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := taskStudio(b)
		run, _ := backendtest.Into(t, b, cks.TaskRunning, "run")
		reader := as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead})
		r := getAs(t, h, fmt.Sprintf("/tasks/%d", run.ID), reader)
		wantHTML(t, r, http.StatusOK)
		acts := section(t, r.body, `id="actions-heading"`, `id="fields-heading"`)
		for _, perm := range []string{auth.PermStop, auth.PermCancel, auth.PermUpdate} {
			mustContain(t, "reader's actions", acts, fmt.Sprintf(`disabled title="forbidden: principal &#34;viewer&#34; needs %s on /tasks/%d"`, perm, run.ID))
		}
		mustNotContain(t, "reader's actions", acts, "/tasks/new?parent=")
		mustNotContain(t, "reader's board", getAs(t, h, "/tasks", reader).body, `href="/tasks/new"`)

		op := section(t, get(t, h, fmt.Sprintf("/tasks/%d", run.ID)).body, `id="actions-heading"`, `id="fields-heading"`)
		mustNotContain(t, "operator's actions", op, "disabled title=\"forbidden")
		mustContain(t, "operator's actions", op, "/tasks/new?parent=")
		mustContain(t, "operator's board", get(t, h, "/tasks").body, `href="/tasks/new"`)
	})
}

// TestPanelGroupsByKind: the Agent Panel groups the process cards by kind,
// a kind with a live instance first and its live instances in view; stopped
// instances are collapsed under the kind, the newest studio.HistoryCap of
// them, with a link to the older ones, which the history page lists a page
// at a time (list_processes with history) until every one was shown once;
// a current task links to its page.
func TestPanelGroupsByKind(t *testing.T) {
	e := newFullEnv(t)
	busy := backendtest.Liveness("critic-live-000000000001", "critic", 0)
	task := int64(9)
	busy.CurrentTaskID, busy.CurrentTaskType = &task, "review"
	backendtest.MustUpsert(t, e.store, busy)
	old := studio.HistoryCap + 2
	for i := range old {
		backendtest.MustUpsert(t, e.store, backendtest.Liveness(fmt.Sprintf("critic-old-%014d", i), "critic", -time.Hour-time.Duration(i)*time.Minute))
	}
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("exec-old-0000000000001", "exec", -time.Hour))
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	critic := section(t, page.body, `data-kind="critic"`, `data-kind="exec"`)
	live := section(t, critic, `critic <span`, `<details class="history">`)
	mustContain(t, "critic's live cards", live, `data-process-card="critic-live-000000000001"`, `<a class="task" href="/tasks/9">#9</a> review`)
	mustNotContain(t, "critic's live cards", live, "critic-old-")
	hist := critic[strings.Index(critic, `<details class="history">`):]
	if n := strings.Count(hist, `data-process-card="critic-old-`); n != studio.HistoryCap {
		t.Errorf("%d exited critic cards listed, want %d", n, studio.HistoryCap)
	}
	mustContain(t, "critic's history", hist, "Earlier instances", fmt.Sprintf("The newest %d shown.", studio.HistoryCap))
	mustContain(t, "exec group", page.body[strings.Index(page.body, `data-kind="exec"`):], "No live instance of exec.", `data-process-card="exec-old-0000000000001"`)

	// The history page, from the first page on, lists every critic
	// instance once, the live one first.
	seen := map[string]int{}
	next := studio.HistoryPath + "?kind=critic"
	for range 10 {
		p := get(t, e.h, next)
		wantHTML(t, p, http.StatusOK)
		for _, m := range regexp.MustCompile(`data-process-card="([^"]+)"`).FindAllStringSubmatch(p.body, -1) {
			seen[m[1]]++
		}
		mustNotContain(t, "critic's history page", p.body, "exec-old-")
		m := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(p.body)
		if m == nil {
			break
		}
		next = html.UnescapeString(m[1])
	}
	if len(seen) != old+1 {
		t.Errorf("the history pages listed %d critic instances, want %d: %v", len(seen), old+1, seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	// A bad cursor or kind is a 400 naming the field.
	for q, field := range map[string]string{"?cursor=nope": "cursor", "?kind=jani%20tor": "kind"} {
		p := get(t, e.h, studio.HistoryPath+q)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid "+field) {
			t.Errorf("%s: %d, want 400 naming %s", q, p.status, field)
		}
	}
}

// TestPanelKeepsRecentlyStoppedInPlace: an instance that stopped within
// studio.RecentlyStopped keeps its card among its kind's live ones, reading
// stopped, in its place by start (an operator who clicked its Stop sees it
// end there); one stopped longer ago is in the collapsed history.
func TestPanelKeepsRecentlyStoppedInPlace(t *testing.T) {
	e := newFullEnv(t)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-new-000000000001", "critic", 0))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-just-stopped-0001", "critic", -5*time.Minute))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("critic-old-000000000001", "critic", -time.Hour))
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	critic := section(t, page.body, `data-kind="critic"`, `<details class="history">`)
	mustContain(t, "critic's cards", critic, "critic <span class=\"count count--alive\">1 alive</span>",
		`data-process-card="critic-new-000000000001"`, `data-process-card="critic-just-stopped-0001"`)
	mustNotContain(t, "critic's cards", critic, "critic-old-", "No live instance")
	if strings.Index(critic, "critic-new-") > strings.Index(critic, "critic-just-stopped-") {
		t.Error("the stopped instance's card is not in its place (newest started first)")
	}
	card := critic[strings.Index(critic, `data-process-card="critic-just-stopped-0001"`):]
	mustContain(t, "the stopped card", card[:strings.Index(card, "</li>")], `status--stopped`)
	hist := page.body[strings.Index(page.body, `<details class="history">`):]
	mustContain(t, "critic's history", hist, `data-process-card="critic-old-000000000001"`)
	mustNotContain(t, "critic's history", hist, "critic-just-stopped-")
}

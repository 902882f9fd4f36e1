package studio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/driver/sqlite"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// fullEnv is a studio with sweeper cards and the task board over a real
// SQLite store whose clock (and the studio's) is a fake at T0.
type fullEnv struct {
	store *backend.Backend
	clock *clock.Fake
	ctl   *sweeper.Controller
	h     http.Handler
	logs  *bytes.Buffer
	path  string // the database file
}

// stepSweeper counts its passes and fails with err when err is set.
type stepSweeper struct {
	id    string
	count int
	err   error
}

func (s stepSweeper) ID() string                             { return s.id }
func (s stepSweeper) SweepOnce(context.Context) (int, error) { return s.count, s.err }

func newFullEnv(t *testing.T) fullEnv {
	t.Helper()
	c := clock.NewFake(backendtest.T0)
	path := filepath.Join(t.TempDir(), "cks.db")
	s, err := backend.Open(context.Background(), path, driver.WithClock(c))
	if err != nil {
		t.Fatalf("backend.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	reg := s.Sweepers.Registry()
	for _, sw := range []struct {
		sw       stepSweeper
		interval time.Duration
		enabled  bool
	}{
		{stepSweeper{id: "lease_reaper", count: 3}, 30 * time.Second, true},
		{stepSweeper{id: "flaky", err: errors.New(`store said <b>no</b>`)}, time.Minute, true},
		{stepSweeper{id: "stale_stop_report"}, 5 * time.Minute, false},
	} {
		if _, err := reg.Register(sw.sw, sweeper.Options{Interval: sw.interval, ConfigEnabled: sw.enabled,
			Overrides: s.Sweepers, Clock: c, Logger: slog.New(slog.DiscardHandler), Passes: s.Sweepers}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := reg.StopAll(context.Background()); err != nil {
			t.Errorf("StopAll: %v", err)
		}
	})
	ctl := s.Sweepers
	logs := &bytes.Buffer{}
	h := studio.New(&ops.Services{Liveness: liveness.NewService(s.Driver(), c), Sweepers: ctl, Tasks: s.Tasks, Clock: c},
		studio.Options{Version: "v-test", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return fullEnv{store: s, clock: c, ctl: ctl, h: h, logs: logs, path: path}
}

// waitRuns waits until sweeper id has completed at least n passes.
func waitRuns(t *testing.T, ctl *sweeper.Controller, id string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := ctl.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.RunCount >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d passes after 10 s, want %d", id, st.RunCount, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweeperCard returns the HTML of sweeper id's card in body.
func sweeperCard(t *testing.T, body, id string) string {
	t.Helper()
	for _, part := range strings.Split(body, "<li ")[1:] {
		if strings.Contains(part, `data-sweeper-card="`+id+`"`) {
			return part[:strings.Index(part, "</li>")]
		}
	}
	t.Fatalf("no card for sweeper %s in\n%s", id, body)
	return ""
}

func TestSweeperCardsFollowStartAndStop(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()

	// Nothing started yet: every card reads stopped with no override.
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body, `<div id="sweepers" class="processes">`, "0 running", "3 stopped",
		`<a href="/tasks">Tasks</a>`)
	mustNotContain(t, "page", page.body, "later release")
	c := sweeperCard(t, page.body, "lease_reaper")
	mustContain(t, "idle card", c, "</span>stopped</span>", `override--none">none<`, "<dd>30s</dd>",
		`<span class="idle">never</span>`, `data-sweeper="lease_reaper" data-sweeper-action="start">Start</button>`)

	// Started: running, override start, a completed pass, a Stop button.
	if _, err := e.ctl.Start(ctx, "lease_reaper"); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, e.ctl, "lease_reaper", 1)
	e.clock.Advance(12 * time.Second)
	page = get(t, e.h, "/")
	c = sweeperCard(t, page.body, "lease_reaper")
	mustContain(t, "running card", c, `class="card card--sweeper"`, "</span>running</span>", `override--start">start<`,
		">12s ago<", "<dt>Last result</dt><dd>3</dd>", "<dt>Last duration</dt><dd>0.0 ms</dd>", "<dt>Runs</dt><dd>1</dd>",
		`data-sweeper-action="stop">Stop</button>`)
	mustNotContain(t, "running card", c, "Last error")
	// Its recent passes: the one pass, when, how long, what it found.
	mustContain(t, "running card's passes", c, `<caption>Recent passes</caption>`,
		`<tr data-pass><td><time datetime="2026-11-30T12:00:00Z" title="2026-11-30T12:00:00Z">12s ago</time></td><td>0.0 ms</td><td>3</td></tr>`)

	// Stopped through the controller: stopped, override stop, a Start button.
	if _, err := e.ctl.Stop(ctx, "lease_reaper"); err != nil {
		t.Fatal(err)
	}
	frag := get(t, e.h, studio.SweepersFragmentPath)
	wantHTML(t, frag, http.StatusOK)
	if got := frag.header.Get("X-Studio-Fragment"); got != "sweepers" {
		t.Errorf("X-Studio-Fragment = %q, want sweepers", got)
	}
	mustNotContain(t, "fragment", frag.body, "<html", "Processes")
	c = sweeperCard(t, frag.body, "lease_reaper")
	mustContain(t, "stopped card", c, "card--stopped", "</span>stopped</span>", `override--stop">stop<`,
		"<dt>Runs</dt><dd>1</dd>", `data-sweeper-action="start">Start</button>`)
	mustNotContain(t, "stopped card", c, `data-sweeper-action="stop"`)
	mustContain(t, "page", get(t, e.h, "/").body, strings.TrimSpace(frag.body))
}

func TestSweeperCardShowsLastErrorAndDisabled(t *testing.T) {
	e := newFullEnv(t)
	if _, err := e.ctl.Start(context.Background(), "flaky"); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, e.ctl, "flaky", 1)
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)

	c := sweeperCard(t, page.body, "flaky")
	mustContain(t, "failing card", c, "card--error", `class="card__error" role="alert"`,
		"<strong>Last error:</strong> store said &lt;b&gt;no&lt;/b&gt;")
	mustNotContain(t, "failing card", c, "<b>no")

	off := sweeperCard(t, page.body, "stale_stop_report")
	mustContain(t, "disabled card", off, "disabled by configuration", "</span>stopped</span>", "cannot be started")
	mustNotContain(t, "disabled card", off, "<button", "data-sweeper-action")
}

func TestSweeperListErrorRendersMessage(t *testing.T) {
	var logs bytes.Buffer
	// Sweeper control on a closed database: every override read fails.
	dead, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "dead.db"))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	if _, err := dead.Sweepers.Registry().Register(stepSweeper{id: "lease_reaper"}, sweeper.Options{Interval: time.Minute, ConfigEnabled: true}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	h := studio.New(&ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Sweepers: dead.Sweepers}, studio.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, target := range []string{"/", studio.SweepersFragmentPath} {
		logs.Reset()
		r := get(t, h, target)
		wantHTML(t, r, http.StatusInternalServerError)
		mustContain(t, target, r.body, "Could not load sweepers.")
		mustNotContain(t, target, r.body, "closed")
		mustContain(t, "log", logs.String(), "level=ERROR", "studio: list sweepers", "closed")
	}
}

// Task board.

func enqueue(t *testing.T, s *backend.Backend, typ, title string) cks.Task {
	t.Helper()
	return backendtest.MustEnqueue(t, s, cks.NewTask{Type: typ, Title: title, Priority: 5, CreatedBy: "tester"})
}

func claim(t *testing.T, s *backend.Backend, typ string) cks.ClaimedTask {
	t.Helper()
	ts, err := s.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "worker-1", Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim %s: %v, %d tasks", typ, err, len(ts))
	}
	return ts[0]
}

// hold stops task id as an operator does, "held for inspection".
func hold(t *testing.T, s *backend.Backend, id int64) {
	t.Helper()
	if _, err := s.Tasks.StopTask(context.Background(), ledger.StopParams{ID: id, Actor: "operator", Reason: "held for inspection"}); err != nil {
		t.Fatalf("stop task %d: %v", id, err)
	}
}

// section returns the part of body from the first from up to the first to.
func section(t *testing.T, body, from, to string) string {
	t.Helper()
	i := strings.Index(body, from)
	j := strings.Index(body, to)
	if i < 0 || j < 0 || j < i {
		t.Fatalf("no section %q … %q in\n%s", from, to, body)
	}
	return body[i:j]
}

func TestTaskBoardSections(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	open := enqueue(t, e.store, "plain", "Just open")
	oldStop := enqueue(t, e.store, "plain", "Stopped long ago")
	hold(t, e.store, oldStop.ID)
	ask := enqueue(t, e.store, "ask", "Needs a human")
	c := claim(t, e.store, "ask")
	if _, err := e.store.Tasks.RequestInput(ctx, ask.ID, c.LeaseToken, "Which <b>bucket</b> should I use?"); err != nil {
		t.Fatal(err)
	}
	done := enqueue(t, e.store, "finish", "All done")
	c = claim(t, e.store, "finish")
	if _, err := e.store.Tasks.Complete(ctx, done.ID, c.LeaseToken, false, "ok"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(25 * time.Hour)
	newStop := enqueue(t, e.store, "plain", "Stopped just now")
	hold(t, e.store, newStop.ID)
	e.clock.Advance(time.Minute)

	page := get(t, e.h, "/tasks")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "board", page.body, `<a href="/tasks" aria-current="page">Tasks</a>`,
		`chip--stopped`, `STOPPED <span class="chip__n">2</span>`, `NEEDS_INPUT <span class="chip__n">1</span>`,
		`All <span class="chip__n">5</span>`)

	// The STOPPED section comes first, is highlighted, and flags the old stop.
	stopped := section(t, page.body, `id="stopped-heading"`, `id="inbox-heading"`)
	if strings.Index(page.body, `id="stopped-heading"`) > strings.Index(page.body, `id="live-heading"`) {
		t.Errorf("stopped section is not before the live work")
	}
	mustContain(t, "stopped section", page.body, `board-stopped board-stopped--some`)
	mustContain(t, "stopped section", stopped, `Stopped <span class="count">2</span>`,
		"1 stopped for longer than 24 h.",
		fmt.Sprintf(`<a href="/tasks/%d">#%d</a>`, oldStop.ID, oldStop.ID), "Stopped long ago",
		fmt.Sprintf(`<a href="/tasks/%d">#%d</a>`, newStop.ID, newStop.ID), "Stopped just now",
		`<tr class="row--stopped row--stale" data-key="task-`, "over 24 h", ">1d ago<", ">1m ago<")
	if n := strings.Count(stopped, "row--stale"); n != 1 {
		t.Errorf("%d stale rows, want 1 (only task %d)", n, oldStop.ID)
	}
	mustNotContain(t, "stopped section", stopped, "Just open", "Needs a human")

	inbox := section(t, page.body, `id="inbox-heading"`, `id="live-heading"`)
	mustContain(t, "inbox", inbox, "Needs a human", `<span class="question__label">Question:</span>`,
		"Which &lt;b&gt;bucket&lt;/b&gt; should I use?")
	mustNotContain(t, "inbox", inbox, "<b>bucket")

	live := section(t, page.body, `id="live-heading"`, `id="finished-heading"`)
	mustContain(t, "live", live, "Just open", fmt.Sprintf("#%d<", open.ID), `<td class="num" data-label="Attempts">0/3</td>`)
	mustNotContain(t, "live", live, "All done", "Stopped")
	mustContain(t, "finished", page.body, `<a href="/tasks?state=COMPLETED">COMPLETED 1</a>`)

	// One state.
	r := get(t, e.h, "/tasks?state=COMPLETED")
	wantHTML(t, r, http.StatusOK)
	mustContain(t, "COMPLETED list", r.body, "All done", `class="chip chip--completed chip--active"`)
	mustNotContain(t, "COMPLETED list", r.body, "Just open", "Stopped long ago", "Needs a human")
}

// TestTaskBoardRejectsUnknownState: a state list_tasks refuses is refused
// in the words of list_tasks (one rule, one message), escaped.
func TestTaskBoardRejectsUnknownState(t *testing.T) {
	e := newFullEnv(t)
	for _, tc := range []struct{ query, want string }{
		{"state=BOGUS", "invalid state: expected one of OPEN, WAITING, BLOCKED, CLAIMED, RUNNING, NEEDS_REVIEW, NEEDS_INPUT, REVIEWING, COMPLETED, FAILED, CANCELLED, STOPPED, got &#34;BOGUS&#34;"},
		{"state=%3Cscript%3E", "got &#34;&lt;script&gt;&#34;"},
		{"state=OPEN&after=x", "after=&#34;x&#34; is not a task id"},
	} {
		r := get(t, e.h, "/tasks?"+tc.query)
		wantHTML(t, r, http.StatusBadRequest)
		mustContain(t, tc.query, r.body, "<h1>Bad task filter</h1>", tc.want)
		mustNotContain(t, tc.query, r.body, "<script>")
	}
}

func TestTaskBoardCapsLongLists(t *testing.T) {
	e := newFullEnv(t)
	var ids []int64
	for i := range studio.BoardCap + 5 {
		ids = append(ids, enqueue(t, e.store, "bulk", fmt.Sprintf("bulk %d", i)).ID)
	}
	// Newest first: the next page starts after the 200th newest, and holds
	// the 5 oldest.
	cursor, first1 := ids[5], ids[0]
	page := get(t, e.h, "/tasks")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "board", page.body, fmt.Sprintf("Showing the first %d of %d.", studio.BoardCap, studio.BoardCap+5))
	if n := strings.Count(page.body, "<tr class=\"row--open\" data-key="); n != studio.BoardCap {
		t.Errorf("%d rows, want %d", n, studio.BoardCap)
	}

	first := get(t, e.h, "/tasks?state=OPEN")
	mustContain(t, "first page", first.body, "Next page →", fmt.Sprintf(`href="/tasks?after=%d&amp;state=OPEN"`, cursor))
	second := get(t, e.h, fmt.Sprintf("/tasks?state=OPEN&after=%d", cursor))
	wantHTML(t, second, http.StatusOK)
	if n := strings.Count(second.body, "<tr class=\"row--open\" data-key="); n != 5 {
		t.Errorf("second page has %d rows, want 5", n)
	}
	mustContain(t, "second page", second.body, fmt.Sprintf("#%d<", first1), "Back to the first page")
	mustNotContain(t, "second page", second.body, "Next page")
}

func TestTaskPage(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	task := backendtest.MustEnqueue(t, e.store, cks.NewTask{Type: "research", Title: "Find <the> answer",
		Description: "Look it up.", Payload: []byte(`{"q":"<script>alert(1)</script>","n":1}`), Priority: 7, CreatedBy: "tester"})

	c := claim(t, e.store, "research")
	if _, err := e.store.Tasks.AddEvidence(ctx, task.ID, c.LeaseToken, "note", "first try evidence"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Tasks.Fail(ctx, task.ID, c.LeaseToken, true, "network flake"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour) // past the retry backoff
	c = claim(t, e.store, "research")
	if _, err := e.store.Tasks.AddEvidence(ctx, task.ID, c.LeaseToken, "log", "second try evidence"); err != nil {
		t.Fatal(err)
	}

	r := get(t, e.h, fmt.Sprintf("/tasks/%d", task.ID))
	wantHTML(t, r, http.StatusOK)
	mustContain(t, "task page", r.body, "Find &lt;the&gt; answer", `state--claimed">CLAIMED<`, "2 of 3",
		"Look it up.", `id="task-actions"`, fmt.Sprintf(`data-task-actions="%d"`, task.ID), `data-task-action="stop"`,
		"{\n  &#34;q&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;,\n  &#34;n&#34;: 1\n}</pre>",
		"<dt>Claimed by</dt><dd>worker-1</dd>")
	mustNotContain(t, "task page", r.body, "<script>alert", "<the>")

	current := section(t, r.body, `id="current-heading"`, `id="history-heading"`)
	mustContain(t, "current evidence", current, "(restart 0, attempt 2, task revision 1)", "second try evidence", "attempt 2")
	mustNotContain(t, "current evidence", current, "first try evidence")
	older := section(t, r.body, `id="history-heading"`, `id="aborts-heading"`)
	mustContain(t, "older evidence", older, "<h3>Restart 0 · attempt 1</h3>", "first try evidence")
	mustNotContain(t, "older evidence", older, "second try evidence", "badge--aborted")
	mustContain(t, "aborts", r.body, "No abort was ever requested.")

	events := r.body[strings.Index(r.body, `id="events-heading"`):]
	mustContain(t, "events", events, `<span class="idle">created</span> → <span class="state state--open">OPEN</span>`,
		`OPEN → <span class="state state--claimed">CLAIMED</span>`, "network flake", `<td data-label="Actor">tester</td>`,
		"2026-11-30 12:00:00 UTC")
	if n := strings.Count(events, "<tr>"); n != 5 { // header, created, claimed, failed→open, claimed
		t.Errorf("event table has %d rows, want 5 (header + 4 events)\n%s", n, events)
	}
}

func TestTaskPageStaleStopAndNotFound(t *testing.T) {
	e := newFullEnv(t)
	task := enqueue(t, e.store, "plain", "Held")
	hold(t, e.store, task.ID)
	e.clock.Advance(48 * time.Hour)
	r := get(t, e.h, fmt.Sprintf("/tasks/%d", task.ID))
	wantHTML(t, r, http.StatusOK)
	mustContain(t, "page", r.body, "Stopped for longer than 24 h (since 2d ago).", "held for inspection", `<td data-label="Actor">operator</td>`)

	for target, want := range map[string]string{
		"/tasks/999":   "There is no task 999.",
		"/tasks/abc":   "There is no task &#34;abc&#34;",
		"/tasks/-3":    "There is no task &#34;-3&#34;",
		"/tasks/x<b>y": "There is no task &#34;x&lt;b&gt;y&#34;",
	} {
		r := get(t, e.h, strings.ReplaceAll(target, "<b>", "%3Cb%3E"))
		wantHTML(t, r, http.StatusNotFound)
		mustContain(t, target, r.body, "<h1>Task not found</h1>", want)
	}
}

func TestTasksAbsentWithoutStore(t *testing.T) {
	e := newEnv(t)
	r := get(t, e.h, "/tasks")
	wantHTML(t, r, http.StatusNotFound)
	mustContain(t, "404", r.body, "Page not found")
}

func TestTaskServiceErrorsRenderMessage(t *testing.T) {
	var logs bytes.Buffer
	e := newEnv(t)
	// A ledger on a closed database: every read fails.
	dead, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "dead.db"))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	h := studio.New(&ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Tasks: dead.Tasks}, studio.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for target, want := range map[string]string{
		"/tasks":   "Could not load tasks",
		"/tasks/7": "Task 7 could not be read",
	} {
		logs.Reset()
		r := get(t, h, target)
		wantHTML(t, r, http.StatusInternalServerError)
		mustContain(t, target, r.body, want, `role="alert"`)
		mustNotContain(t, target, r.body, "closed")
		mustContain(t, "log", logs.String(), "level=ERROR", "closed")
	}
}

// detailSweeper reports details after each pass, as graph_health does.
type detailSweeper struct{ stepSweeper }

func (detailSweeper) Details() any {
	return map[string]any{"orphans": 2, "example_cycles": [][]int64{{1, 2, 1}}}
}

// TestSweeperCardShowsDetails: what a pass reported beyond its count is on
// the card.
func TestSweeperCardShowsDetails(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.Sweepers.Registry().Register(detailSweeper{stepSweeper{id: "graph_health", count: 2}}, sweeper.Options{Interval: time.Hour, ConfigEnabled: true}); err != nil {
		t.Fatal(err)
	}
	ctl := e.store.Sweepers
	if _, err := ctl.Start(context.Background(), "graph_health"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Stop(context.Background(), "graph_health") })
	waitRuns(t, ctl, "graph_health", 1)
	h := studio.New(&ops.Services{Liveness: liveness.NewService(e.store.Driver(), e.clock), Sweepers: ctl}, studio.Options{})
	page := get(t, h, "/")
	wantHTML(t, page, http.StatusOK)
	c := sweeperCard(t, page.body, "graph_health")
	mustContain(t, "details", c, "<dt>orphans</dt><dd><code>2</code></dd>", "<dt>example_cycles</dt><dd><code>[[1,2,1]]</code></dd>")
}

// countingDriver counts the count reads made of its database.
type countingDriver struct {
	driver.Driver
	counts *atomic.Int64
}

func (d countingDriver) Executor() driver.Executor {
	return countingExecutor{Executor: d.Driver.Executor(), counts: d.counts}
}

type countingExecutor struct {
	driver.Executor
	counts *atomic.Int64
}

func (e countingExecutor) TaskCount(ctx context.Context, p driver.TaskCountParams) (int, error) {
	e.counts.Add(1)
	return e.Executor.TaskCount(ctx, p)
}

func (e countingExecutor) TaskCountByState(ctx context.Context, p driver.TaskCountParams) ([]driver.TaskStateCount, error) {
	e.counts.Add(1)
	return e.Executor.TaskCountByState(ctx, p)
}

// TestTaskBoardCountsInOneRead: the board's counts of every state are one
// read of count_tasks (once a count per state), and the long-stopped count
// one more when any task is STOPPED.
func TestTaskBoardCountsInOneRead(t *testing.T) {
	e := newFullEnv(t)
	var counts atomic.Int64
	// A second set of services on the same database, its reads counted.
	d, err := sqlite.Open(context.Background(), e.path, driver.WithClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	counted := backend.New(countingDriver{Driver: d, counts: &counts}, driver.WithClock(e.clock))
	t.Cleanup(func() { counted.Close() })
	h := studio.New(&ops.Services{Liveness: counted.Liveness, Tasks: counted.Tasks, Clock: e.clock}, studio.Options{})
	enqueue(t, e.store, "plain", "Just open")
	page := get(t, h, "/tasks")
	wantHTML(t, page, http.StatusOK)
	if n := counts.Swap(0); n != 1 {
		t.Errorf("a board without STOPPED tasks made %d count reads, want 1", n)
	}
	held := enqueue(t, e.store, "plain", "Held")
	hold(t, e.store, held.ID)
	e.clock.Advance(25 * time.Hour)
	page = get(t, h, "/tasks")
	mustContain(t, "board", page.body, `STOPPED <span class="chip__n">1</span>`, `OPEN <span class="chip__n">1</span>`,
		`All <span class="chip__n">2</span>`, "1 stopped for longer than 24 h.")
	if n := counts.Swap(0); n != 2 {
		t.Errorf("a board with STOPPED tasks made %d count reads, want 2", n)
	}
}

// notLeader is a Leadership that never leads: another hub runs the passes.
type notLeader struct{}

func (notLeader) IsLeader() bool { return false }

// TestSweeperCardsSayStandby: on a hub that is not the maintenance leader
// the panel names the leader hub and reads the running loops standby.
func TestSweeperCardsSayStandby(t *testing.T) {
	c := clock.NewFake(backendtest.T0)
	s, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"), driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Driver().Executor().LeaderElect(context.Background(), driver.LeaderElectParams{Name: "maintenance",
		LeaderID: "other-host/42/abcd", TTL: time.Hour, Now: backendtest.T0}); err != nil {
		t.Fatal(err)
	}
	reg := s.Sweepers.Registry()
	r, err := reg.Register(stepSweeper{id: "lease_reaper", count: 3}, sweeper.Options{Interval: time.Hour, ConfigEnabled: true,
		Overrides: s.Sweepers, Clock: c, Logger: slog.New(slog.DiscardHandler), Leader: notLeader{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.StopAll(context.Background()) })
	deadline := time.Now().Add(10 * time.Second)
	for !r.Status().Standby {
		if time.Now().After(deadline) {
			t.Fatal("the runner never stood by")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h := studio.New(&ops.Services{Liveness: liveness.NewService(s.Driver(), c), Sweepers: s.Sweepers, Clock: c},
		studio.Options{Version: "v-test"})
	page := get(t, h, "/")
	mustContain(t, "panel", page.body, "this hub stands by", "<code>other-host/42/abcd</code>")
	mustContain(t, "standby card", sweeperCard(t, page.body, "lease_reaper"), "</span>standby</span>", "<dt>Runs</dt><dd>0</dd>")
	mustNotContain(t, "standby card before the leader's pass", sweeperCard(t, page.body, "lease_reaper"), "<tr data-pass>")

	// The leader's pass, recorded in the database, shows on this hub's card.
	if err := s.Sweepers.RecordPass(context.Background(), "lease_reaper", cks.SweeperPass{At: backendtest.T0, DurationMS: 4,
		Count: 9, Hub: "other-host/42/abcd"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	page = get(t, h, "/")
	mustContain(t, "standby card's passes", sweeperCard(t, page.body, "lease_reaper"),
		`<tr data-pass><td><time datetime="2026-11-30T12:00:00Z" title="2026-11-30T12:00:00Z on hub other-host/42/abcd">1m ago</time></td><td>4.0 ms</td><td>9</td></tr>`)
}

// TestTaskBoardNamesUnclaimedTypes (issue 39 item 8): the board says, over
// its sections, which task types have tasks waiting that no worker claims
// (a minute after they became due), linking each to its OPEN tasks; once a
// live process names the type in its --types the notice goes.
func TestTaskBoardNamesUnclaimedTypes(t *testing.T) {
	e := newFullEnv(t)
	enqueue(t, e.store, "build", "Nobody builds")
	enqueue(t, e.store, "build", "Nobody builds either")
	if strings.Contains(get(t, e.h, "/studio/tasks").body, "data-unclaimed") {
		t.Fatal("the board names an unclaimed type before its tasks waited a minute")
	}
	e.clock.Advance(2 * time.Minute)
	frag := get(t, e.h, "/studio/tasks").body
	if !strings.Contains(frag, "data-unclaimed") || !strings.Contains(frag, `data-unclaimed-type="build"`) ||
		!strings.Contains(frag, "2 waiting since") {
		t.Fatalf("the board does not name build as unclaimed:\n%s", frag)
	}
	w := backendtest.Liveness("i-builder", "exec", 2*time.Minute)
	w.TaskTypes = []string{"build"}
	backendtest.MustUpsert(t, e.store, w)
	if frag := get(t, e.h, "/studio/tasks").body; strings.Contains(frag, "data-unclaimed") {
		t.Fatalf("the board names build unclaimed while a live worker claims it:\n%s", frag)
	}
}

// TestTaskBoardRowSaysWhoStopped (issue 39 item 3): a STOPPED row on the
// board says who stopped the task and why, from the stop's event; a row in
// another state says nothing of the kind.
func TestTaskBoardRowSaysWhoStopped(t *testing.T) {
	e := newFullEnv(t)
	held := enqueue(t, e.store, "plain", "Held by an operator")
	if _, err := e.store.Tasks.StopTask(context.Background(), ledger.StopParams{ID: held.ID, Actor: "ops-alice", Reason: "waiting on the <vendor>", Deadline: time.Minute}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, e.store, "plain", "Still open")
	body := get(t, e.h, "/studio/tasks").body
	row := body[strings.Index(body, fmt.Sprintf(`data-key="task-%d"`, held.ID)):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "data-stopped-by") || !strings.Contains(row, "<strong>ops-alice</strong>") ||
		!strings.Contains(row, "</strong>: waiting on the &lt;vendor&gt;") {
		t.Fatalf("the STOPPED row does not say who stopped it and why:\n%s", row)
	}
	if strings.Count(body, "data-stopped-by") != 1 {
		t.Fatalf("%d rows say who stopped them, want the one STOPPED", strings.Count(body, "data-stopped-by"))
	}
}

// TestTaskBoardShowsPausedTypes (issue 42 item 6): the board says which
// task types are paused, by whom, since when and why, and a paused type's
// waiting tasks are not named unclaimed (no worker would take them); once
// the type is resumed the notice goes.
func TestTaskBoardShowsPausedTypes(t *testing.T) {
	e := newFullEnv(t)
	ctx := context.Background()
	enqueue(t, e.store, "build", "Held while the provider is down")
	if _, err := e.store.Tasks.PauseType(ctx, ledger.PauseTypeParams{Type: "build", Actor: "ops", Reason: "provider down"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	frag := get(t, e.h, "/studio/tasks").body
	for _, want := range []string{"data-paused", `data-paused-type="build"`, "by ops", "2m ago", "provider down"} {
		if !strings.Contains(frag, want) {
			t.Fatalf("the board lacks %q for the paused type:\n%s", want, frag)
		}
	}
	if strings.Contains(frag, "data-unclaimed") {
		t.Fatalf("the board names a paused type unclaimed:\n%s", frag)
	}
	if _, err := e.store.Tasks.ResumeType(ctx, "build"); err != nil {
		t.Fatal(err)
	}
	if frag := get(t, e.h, "/studio/tasks").body; strings.Contains(frag, "data-paused") {
		t.Fatalf("the board shows a resumed type paused:\n%s", frag)
	}
}

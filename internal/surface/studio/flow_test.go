package studio_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// flowEnv is the hub's API (with the studio behind it) over a store whose
// services tell the time by a fake clock at T0 (a Monday, 12:00 UTC), with
// the type build paused by ops and the schedule nightly (02:00 in Berlin,
// UTC+1 in December) made.
type flowEnv struct {
	b     *backend.Backend
	clock *clock.Fake
	h     http.Handler
}

func newFlowEnv(t *testing.T, open backendtest.Opener) flowEnv {
	t.Helper()
	c := clock.NewFake(backendtest.T0)
	b := open(t, driver.WithClock(c))
	services := &ops.Services{Tasks: b.Tasks, Schedules: b.Schedules, Principals: b.Principals, Clock: c}
	a := api.New(api.Config{Services: services, Studio: studio.New(services, studio.Options{Version: "v-test"})})
	t.Cleanup(a.CloseStreams)
	ctx := context.Background()
	if _, err := b.Tasks.PauseType(ctx, ledger.PauseTypeParams{Type: "build", Actor: "ops", Reason: "provider down"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Schedules.Create(ctx, cks.NewSchedule{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin",
		Misfire: cks.MisfireRunOnce, Task: cks.ScheduleTask{Type: "report", Title: "Nightly report"}, CreatedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Minute)
	return flowEnv{b: b, clock: c, h: a}
}

// call makes a request of the hub's API as a principal of grants (Bearer
// token) and returns its status and body.
func (e flowEnv) call(t *testing.T, tok, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(out)
}

// token is a token of a principal named viewer holding grants.
func (e flowEnv) token(t *testing.T, grants ...cks.Grant) string {
	t.Helper()
	_, tok, err := auth.CreateToken(context.Background(), e.b.Principals, e.clock, "viewer", grants)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// scheduleCard returns the HTML of the schedule name's card in body.
func scheduleCard(t *testing.T, body, name string) string {
	t.Helper()
	i := strings.Index(body, `data-schedule-card="`+name+`"`)
	if i < 0 {
		t.Fatalf("no card for schedule %s in\n%s", name, body)
	}
	return body[i : i+strings.Index(body[i:], "</li>")]
}

// TestFlowPage (issue 42 item 7): on both backends, the Flow control page
// (linked from the navigation) lists a paused type with who paused it,
// since when and why, with its Resume, and the pause form; and a schedule
// with its expression, zone, template type, misfire policy and its next
// five fire times, exact (02:00 in Berlin is 01:00 UTC in December), with
// Pause, Trigger now and Delete. The verbs, called as the page's script
// calls them (the API's routes), act, and the page's live part (the
// fragment its script re-reads) shows it: resume removes the type, the
// form's pause lists one, trigger shows the fire and its task, pause marks
// the schedule paused with no next runs and offers Resume, delete removes
// it.
func TestFlowPage(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"page and verbs": func(t *testing.T, open backendtest.Opener) {
		e := newFlowEnv(t, open)
		admin := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
		code, page := e.call(t, admin, http.MethodGet, studio.FlowPath, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", studio.FlowPath, code, page)
		}
		mustContain(t, "the page", page, `<a href="/flow" aria-current="page">Flow control</a>`, `id="live"`,
			`data-live-fragment="/studio/flow"`, `data-live-events="tasks schedules"`,
			`<tr data-paused-row="build"`, `<td data-label="By" data-paused-by>ops</td>`, `>2m ago</time>`,
			`<td data-label="Why" data-paused-reason>provider down</td>`, `<button type="button" class="button" data-type-resume="build">Resume</button>`,
			`<form class="task-action flow-pause" data-type-pause`, `data-type-pause-button>Pause</button>`)
		card := scheduleCard(t, page, "nightly")
		mustContain(t, "the schedule's card", card, `<code>0 2 * * *</code>`, `<dd>Europe/Berlin</dd>`, `<code>report</code> Nightly report`,
			`<dd>run_once</dd>`, `data-schedule-state="running"`, `<span class="idle">never</span>`,
			`data-schedule-action="pause">Pause</button>`, `data-schedule-action="trigger">Trigger now</button>`,
			`data-schedule-action="delete">Delete</button>`)
		mustNotContain(t, "the schedule's card", card, "disabled", `class="refused"`)
		for d := range 5 {
			at := time.Date(2026, 12, 1+d, 1, 0, 0, 0, time.UTC) // 02:00 CET
			mustContain(t, "the next runs", card, fmt.Sprintf(`<tr data-next-run="%s"><td><time datetime="%[1]s" data-absolute>%s</time>`,
				at.Format(time.RFC3339), at.Format("2006-01-02 15:04:05 UTC")))
		}
		if n := strings.Count(card, "data-next-run="); n != 5 {
			t.Errorf("%d next runs, want 5", n)
		}
		fragment := func() string {
			t.Helper()
			code, body := e.call(t, admin, http.MethodGet, studio.FlowFragmentPath, "")
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", studio.FlowFragmentPath, code, body)
			}
			return body
		}
		verb := func(method, path, body string, want int) string {
			t.Helper()
			code, out := e.call(t, admin, method, path, body)
			if code != want {
				t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
			}
			return out
		}

		verb(http.MethodPost, "/v1/types/resume", `{"type":"build"}`, http.StatusOK)
		frag := fragment()
		mustNotContain(t, "after resume", frag, `data-paused-row="build"`)
		mustContain(t, "after resume", frag, `data-no-paused`)
		verb(http.MethodPost, "/v1/types/pause", `{"type":"deploy","reason":"release freeze"}`, http.StatusOK)
		mustContain(t, "after the form's pause", fragment(), `<tr data-paused-row="deploy"`, `data-paused-by>viewer</td>`,
			`data-paused-reason>release freeze</td>`)

		e.clock.Advance(time.Minute)
		out := verb(http.MethodPost, "/v1/schedules/nightly/trigger", "", http.StatusCreated)
		var id int64
		if _, err := fmt.Sscanf(out[strings.Index(out, `"task_id":`):], `"task_id":%d`, &id); err != nil || id == 0 {
			t.Fatalf("trigger_schedule answered %s: %v", out, err)
		}
		mustContain(t, "after trigger", scheduleCard(t, fragment(), "nightly"),
			fmt.Sprintf(`<dd data-last-fire><time datetime="%s" title="%s">just now</time>: <a class="task" href="/tasks/%d">#%d</a></dd>`,
				e.clock.Now().UTC().Format(time.RFC3339), e.clock.Now().UTC().Format("2006-01-02 15:04:05 UTC"), id, id))

		verb(http.MethodPost, "/v1/schedules/nightly/pause", "", http.StatusOK)
		card = scheduleCard(t, fragment(), "nightly")
		mustContain(t, "after pause", card, `data-schedule-state="paused"`, `paused by viewer`, `data-schedule-action="resume">Resume</button>`,
			"Paused: no slot fires until it is resumed.")
		mustNotContain(t, "after pause", card, "data-next-run=", `data-schedule-action="pause"`)

		verb(http.MethodDelete, "/v1/schedules/nightly", "", http.StatusNoContent)
		frag = fragment()
		mustNotContain(t, "after delete", frag, `data-schedule-card="nightly"`)
		mustContain(t, "after delete", frag, "data-no-schedules")
	}})
}

// TestFlowPageHonoursPermissions: on both backends, a reader of the page
// without control sees the paused types and the schedules with every verb
// disabled, naming the permission it needs (as the Agent Panel shows
// what a viewer may not do); control on /types/build alone enables that
// type's Resume and the pause form, not the schedule's verbs; a viewer who
// may not read the schedules gets the studio's 403 page.
func TestFlowPageHonoursPermissions(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"permissions": func(t *testing.T, open backendtest.Opener) {
		e := newFlowEnv(t, open)
		refused := func(res string) string {
			return fmt.Sprintf(`disabled title="forbidden: principal &#34;viewer&#34; needs control on %s"`, res)
		}
		reader := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
		code, page := e.call(t, reader, http.MethodGet, studio.FlowPath, "")
		if code != http.StatusOK {
			t.Fatalf("a reader's page: %d\n%s", code, page)
		}
		mustContain(t, "a reader's page", page, `data-paused-by>ops</td>`, `data-type-resume="build" `+refused("/types/build"),
			`data-type-pause-button disabled title="forbidden: principal &#34;viewer&#34; needs control on /types"`)
		card := scheduleCard(t, page, "nightly")
		for _, action := range []string{"pause", "trigger", "delete"} {
			mustContain(t, "a reader's schedule card", card, `data-schedule-action="`+action+`" `+refused("/schedules/nightly"))
		}
		if code, out := e.call(t, reader, http.MethodPost, "/v1/schedules/nightly/trigger", ""); code != http.StatusForbidden {
			t.Errorf("a reader's trigger: %d %s, want 403", code, out)
		}

		builder := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermRead}, cks.Grant{Resource: "/types/build", Permission: auth.PermControl})
		_, page = e.call(t, builder, http.MethodGet, studio.FlowPath, "")
		mustContain(t, "the build operator's page", page, `<button type="button" class="button" data-type-resume="build">Resume</button>`,
			`data-type-pause-button>Pause</button>`, `data-schedule-action="trigger" `+refused("/schedules/nightly"))

		typesOnly := e.token(t, cks.Grant{Resource: "/types", Permission: auth.PermRead}, cks.Grant{Resource: "/limits", Permission: auth.PermRead})
		code, page = e.call(t, typesOnly, http.MethodGet, studio.FlowPath, "")
		if code != http.StatusForbidden || !strings.Contains(page, "needs read on /schedules") {
			t.Errorf("a viewer who may not read the schedules: %d, want the 403 page naming read on /schedules\n%s", code, page)
		}
	}})
}

// TestFlowPageLimits: on both backends, the Flow control page lists each
// concurrency limit with its pattern and cap and the keys held now, each
// as a bar of the cap (at cap marked); the set form's call (the API's
// route) adds a limit, Delete's removes it; a reader sees Delete and the
// form disabled, naming the permission.
func TestFlowPageLimits(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{"limits": func(t *testing.T, open backendtest.Opener) {
		e := newFlowEnv(t, open)
		ctx := context.Background()
		admin := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermAdmin})
		fragment := func(tok string) string {
			t.Helper()
			code, body := e.call(t, tok, http.MethodGet, studio.FlowFragmentPath, "")
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", studio.FlowFragmentPath, code, body)
			}
			return body
		}
		mustContain(t, "no limits", fragment(admin), `data-no-limits`, `<form class="task-action flow-limit" data-limit-set`)
		if code, out := e.call(t, admin, http.MethodPost, "/v1/limits", `{"name":"openai","pattern":"openai:*","max_running":2}`); code != http.StatusOK {
			t.Fatalf("set_limit: %d %s", code, out)
		}
		for _, key := range []string{"openai:gpt-5", "openai:gpt-5", "openai:mini"} {
			backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "llm", ConcurrencyKeys: []string{key}})
		}
		if got, err := e.b.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 5, Lease: time.Hour}); err != nil || len(got) != 3 {
			t.Fatalf("claim: %d tasks, %v", len(got), err)
		}
		frag := fragment(admin)
		mustContain(t, "a limit", frag, `<tr data-limit-row="openai"`, `<code>openai:*</code>`, `data-limit-max>2</td>`,
			`data-limit-keys="2" data-limit-saturated="1"`,
			`<li data-key-running="openai:gpt-5"><code>openai:gpt-5</code> <meter min="0" max="2" value="2" title="2 of 2">100%</meter> 2/2 <strong>at cap</strong></li>`,
			`<li data-key-running="openai:mini"><code>openai:mini</code> <meter min="0" max="2" value="1" title="1 of 2">50%</meter> 1/2</li>`,
			`<button type="button" class="button" data-limit-delete="openai">Delete</button>`)

		// A rate limit: the starts in its window, at the rate marked.
		if code, out := e.call(t, admin, http.MethodPost, "/v1/limits", `{"name":"api","pattern":"api","starts":2,"interval":"1m"}`); code != http.StatusOK {
			t.Fatalf("set_limit of a rate: %d %s", code, out)
		}
		for range 3 {
			backendtest.MustEnqueue(t, e.b, cks.NewTask{Type: "api", ConcurrencyKeys: []string{"api"}})
		}
		if got, err := e.b.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"api"}, N: 5, Lease: time.Hour}); err != nil || len(got) != 2 {
			t.Fatalf("claim under the rate: %d tasks, %v", len(got), err)
		}
		mustContain(t, "a rate limit", fragment(admin), `<tr data-limit-row="api"`, `data-limit-max><span class="idle">no cap</span></td>`,
			`data-limit-rate>2 per 1m</td>`,
			`<li data-key-running="api"><code>api</code> 2 running <span data-key-started>2/2 started in 1m</span> <strong>at cap</strong></li>`)

		reader := e.token(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
		mustContain(t, "a reader's limits", fragment(reader),
			`data-limit-delete="openai" disabled title="forbidden: principal &#34;viewer&#34; needs control on /limits/openai"`,
			`data-limit-set-button disabled title="forbidden: principal &#34;viewer&#34; needs control on /limits"`)

		if code, out := e.call(t, admin, http.MethodDelete, "/v1/limits/openai", ""); code != http.StatusOK {
			t.Fatalf("delete_limit: %d %s", code, out)
		}
		frag = fragment(admin)
		mustNotContain(t, "after delete", frag, `data-limit-row="openai"`)
		mustContain(t, "after delete", frag, `data-limit-row="api"`)
	}})
}

package studio_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// env is a studio handler over a real SQLite store and a fake clock at T0.
type env struct {
	store *backend.Backend
	clock *clock.Fake
	h     http.Handler
}

func newEnv(t testing.TB) env {
	t.Helper()
	s, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatalf("backend.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	c := clock.NewFake(backendtest.T0)
	return env{store: s, clock: c, h: studio.New(&ops.Services{Liveness: liveness.NewService(s.Driver(), c), Clock: c}, studio.Options{Version: "v-test"})}
}

type response struct {
	status int
	header http.Header
	body   string
}

// asOperator is r made by the local operator, who holds every permission:
// the hub authenticates the caller in front of the studio, whose pages check
// the permissions of what they read against the caller in the context.
func asOperator(r *http.Request) *http.Request {
	return r.WithContext(auth.WithLocalOperator(r.Context()))
}

func get(t testing.TB, h http.Handler, target string) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, asOperator(httptest.NewRequest(http.MethodGet, target, nil)))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", target, err)
	}
	return response{status: rec.Code, header: rec.Result().Header, body: string(body)}
}

func mustContain(t testing.TB, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not contain %q\n%s", what, w, body)
		}
	}
}

func mustNotContain(t testing.TB, what, body string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(body, u) {
			t.Errorf("%s contains %q\n%s", what, u, body)
		}
	}
}

func wantHTML(t testing.TB, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d\n%s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q, want text/html; charset=utf-8", ct)
	}
}

const instanceID = "3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f"

func TestPanelShowsProcessAndTurnsStopped(t *testing.T) {
	e := newEnv(t)
	r := backendtest.Liveness(instanceID, "critic", 0) // host-a, pid 4242, every 30s
	backendtest.MustUpsert(t, e.store, r)

	steps := []struct {
		name       string
		advance    time.Duration // moved before this step
		wantStatus string
		wantAge    string
	}{
		{"fresh", 12 * time.Second, "alive", "12s ago"},
		{"exactly 3 intervals", 78 * time.Second, "alive", "1m ago"},
		{"past 3 intervals", time.Second, "stopped", "1m ago"},
		{"minutes", 2 * time.Minute, "stopped", "3m ago"},
		{"hours", 2 * time.Hour, "stopped", "2h ago"},
	}
	for _, st := range steps {
		e.clock.Advance(st.advance)
		page := get(t, e.h, "/")
		wantHTML(t, page, http.StatusOK)
		mustContain(t, st.name+" page", page.body,
			"<h2 id=\"processes-heading\">Processes</h2>",
			">critic<", ">host-a<", ">4242<",
			`class="status status--`+st.wantStatus+`"`,
			`</span>`+st.wantStatus+`</span>`,
			">"+st.wantAge+"<",
			`title="`+instanceID+`"`, ">3f2a9c1e…<",
			`<span class="idle">idle</span>`,
		)
		stoppedCard := strings.Contains(page.body, `class="card card--stopped"`)
		if want := st.wantStatus == "stopped"; stoppedCard != want {
			t.Errorf("%s: muted stopped card = %v, want %v", st.name, stoppedCard, want)
		}
	}
}

func TestPanelShowsCurrentTaskAndAliveFirst(t *testing.T) {
	e := newEnv(t)
	busy := backendtest.Liveness("busy-instance-0000000001", "pipeline", 0)
	task := int64(77)
	busy.CurrentTaskID, busy.CurrentTaskType = &task, "research"
	old := backendtest.Liveness("old-instance-00000000002", "enrichment", -time.Hour) // long silent
	newer := backendtest.Liveness("new-instance-00000000003", "fork_resolution", time.Minute)
	newer.LastHeartbeatAt = backendtest.T0.Add(-5 * time.Minute) // started later, but silent
	for _, r := range []cks.AgentLiveness{busy, old, newer} {
		backendtest.MustUpsert(t, e.store, r)
	}

	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body,
		`<span class="task">#77</span> research`,
		`<span class="count count--alive">1 alive</span>`,
		`<span class="count">2 stopped</span>`,
	)
	// Alive instances come first; stopped ones keep newest-started-first order.
	order := []string{">pipeline<", ">fork_resolution<", ">enrichment<"}
	last := -1
	for _, k := range order {
		i := strings.Index(page.body, k)
		if i < last {
			t.Errorf("%s is out of order; want %v", k, order)
		}
		last = i
	}
}

// TestPanelShowsExited: an instance that exited gracefully says so with its
// exit time, instead of a heartbeat age (there is no fake heartbeat to age).
func TestPanelShowsExited(t *testing.T) {
	e := newEnv(t)
	r := backendtest.Liveness("gone-instance-0000000001", "critic", -time.Hour)
	r.LastHeartbeatAt = backendtest.T0.Add(-5 * time.Minute)
	r.ExitedAt = r.LastHeartbeatAt
	backendtest.MustUpsert(t, e.store, r)

	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body, `<dt>Exited</dt>`, `datetime="2026-11-30T11:55:00Z"`, ">exited 5m ago<",
		`</span>stopped</span>`)
	mustNotContain(t, "page", page.body, "<dt>Heartbeat</dt>", "d ago")
}

// TestPanelNamesTaskTypes: a card says which task types its instance
// claims (none for one that claims nothing).
// TestPanelMarksPausedTypes (issue 42 item 6): a paused type among those
// a process claims is marked, with who paused it.
func TestPanelMarksPausedTypes(t *testing.T) {
	e := newFullEnv(t)
	r := backendtest.Liveness("typed-instance-000000001", "exec", 0)
	r.TaskTypes = []string{"build", "lint"}
	backendtest.MustUpsert(t, e.store, r)
	if _, err := e.store.Tasks.PauseType(context.Background(), ledger.PauseTypeParams{Type: "build", Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body, `<dd data-task-types><code>build</code> <span class="badge badge--stale" data-paused-type`,
		`>paused by ops</span>, <code>lint</code></dd>`)
}

func TestPanelNamesTaskTypes(t *testing.T) {
	e := newEnv(t)
	r := backendtest.Liveness("typed-instance-000000001", "exec", 0)
	r.TaskTypes = []string{"build", "<lint>"}
	task := int64(12)
	r.CurrentTaskID, r.CurrentTaskType = &task, "build"
	backendtest.MustUpsert(t, e.store, r)
	idle := backendtest.Liveness("idle-instance-0000000001", "critic", 0)
	backendtest.MustUpsert(t, e.store, idle)

	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "page", page.body, `<dt>Claims</dt><dd data-task-types><code>build</code>, <code>&lt;lint&gt;</code></dd>`,
		`<dt>Claims</dt><dd data-task-types><span class="idle">no task types</span></dd>`)

}

func TestPanelEscapesStoredText(t *testing.T) {
	e := newEnv(t)
	r := backendtest.Liveness(`id"><script>alert(1)</script>`, "critic", 0)
	r.Hostname = "<b>evil</b>"
	task := int64(7) // a task id: the store keeps no current task of id 0
	r.CurrentTaskID = &task
	r.CurrentTaskType = "<img src=x onerror=alert(2)>"
	backendtest.MustUpsert(t, e.store, r)

	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustNotContain(t, "page", page.body, "<script>alert", "<b>evil", "<img src=x")
	mustContain(t, "page", page.body, "&lt;b&gt;evil&lt;/b&gt;", "&lt;img src=x")
}

func TestFragmentHasCardsWithoutChrome(t *testing.T) {
	e := newEnv(t)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness(instanceID, "critic", 0))

	frag := get(t, e.h, studio.FragmentPath)
	wantHTML(t, frag, http.StatusOK)
	if got := frag.header.Get("X-Studio-Fragment"); got != "processes" {
		t.Errorf("X-Studio-Fragment = %q, want processes", got)
	}
	if got := frag.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	mustContain(t, "fragment", frag.body, `<ul class="cards">`, ">critic<", ">host-a<", "alive")
	mustNotContain(t, "fragment", frag.body, "<html", "<head", "cks studio", "Sweepers", "<script")

	// The page embeds exactly the same block inside its container.
	page := get(t, e.h, "/")
	mustContain(t, "page", page.body, `<div id="processes" class="processes">`, strings.TrimSpace(frag.body))
}

func TestEmptyState(t *testing.T) {
	e := newEnv(t)
	for _, target := range []string{"/", studio.FragmentPath} {
		t.Run(target, func(t *testing.T) {
			r := get(t, e.h, target)
			wantHTML(t, r, http.StatusOK)
			mustContain(t, target, r.body, `class="empty"`, "No agent processes have reported yet.")
			mustNotContain(t, target, r.body, `class="card`)
		})
	}
}

func TestPanelWithoutSweeperController(t *testing.T) {
	e := newEnv(t)
	page := get(t, e.h, "/")
	mustContain(t, "page", page.body, "cks studio</a>", ">Sweepers</h2>",
		"Sweeper control is not available in this studio.", "cks v-test")
	mustNotContain(t, "page", page.body, "data-sweeper-action", `href="/tasks"`)
	frag := get(t, e.h, studio.SweepersFragmentPath)
	wantHTML(t, frag, http.StatusOK)
	mustContain(t, "fragment", frag.body, "Sweeper control is not available")
}

func TestServiceErrorRendersMessage(t *testing.T) {
	var logs bytes.Buffer
	// Liveness on a closed database: every read fails.
	dead, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "dead.db"))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	svc := dead.Liveness
	h := studio.New(&ops.Services{Liveness: svc}, studio.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	for _, target := range []string{"/", studio.FragmentPath} {
		t.Run(target, func(t *testing.T) {
			logs.Reset()
			r := get(t, h, target)
			wantHTML(t, r, http.StatusInternalServerError)
			mustContain(t, target, r.body, `role="alert"`, "Could not load processes.")
			mustNotContain(t, target, r.body, "closed") // details go to the log, not the page
			mustContain(t, "log", logs.String(), "level=ERROR", "studio: list processes", "closed")
		})
	}
}

func TestStaticAssets(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		path        string
		contentType string
		contains    string
	}{
		{"/static/studio.css", "text/css; charset=utf-8", ".card"},
		{"/static/studio.js", "text/javascript; charset=utf-8", "EventSource"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := get(t, e.h, tc.path)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d, want 200", r.status)
			}
			if got := r.header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type = %q, want %q", got, tc.contentType)
			}
			if got := r.header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("unversioned Cache-Control = %q, want no-cache", got)
			}
			mustContain(t, tc.path, r.body, tc.contains)

			etag := r.header.Get("ETag")
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Header.Set("If-None-Match", etag)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			if etag == "" || rec.Code != http.StatusNotModified {
				t.Errorf("revalidation with ETag %q: status %d, want 304", etag, rec.Code)
			}
		})
	}
	if r := get(t, e.h, "/static/missing.js"); r.status != http.StatusNotFound {
		t.Errorf("missing asset: status %d, want 404", r.status)
	}
}

var assetRef = regexp.MustCompile(`(?:src|href)="(/static/[^"]+)"`)

// TestPageWiresLiveUpdates follows the page's own asset links: the versioned
// URLs are cacheable for good, and the script listens to /v1/events and
// refreshes from the fragment endpoint.
func TestPageWiresLiveUpdates(t *testing.T) {
	e := newEnv(t)
	page := get(t, e.h, "/")
	var refs [][]string
	for _, m := range assetRef.FindAllStringSubmatch(page.body, -1) {
		if !slices.ContainsFunc(refs, func(r []string) bool { return r[1] == m[1] }) {
			refs = append(refs, m)
		}
	}
	if len(refs) != 3 {
		t.Fatalf("page links %d assets, want 3 (css, js, the favicon)\n%s", len(refs), page.body)
	}
	var js string
	for _, m := range refs {
		r := get(t, e.h, strings.ReplaceAll(m[1], "&amp;", "&"))
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: status %d", m[1], r.status)
		}
		if got := r.header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
			t.Errorf("GET %s: Cache-Control = %q, want long-lived immutable", m[1], got)
		}
		if strings.Contains(m[1], ".js") {
			js = r.body
		}
	}
	mustContain(t, "studio.js", js,
		`new EventSource("/v1/events")`,
		`addEventListener("processes"`,
		`"`+studio.FragmentPath+`"`,
		"10000",
		`"live"`, `"reconnecting…"`,
		`addEventListener("sweepers"`,
		`"`+studio.SweepersFragmentPath+`"`,
		`"/v1/sweepers/"`, `method: "POST"`, `credentials: "same-origin"`, "body.error.message",
	)
}

func TestLoginForm(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		target    string
		wantError bool
		throttled string // the wait the page names, when throttled
	}{
		{studio.LoginPath, false, ""},
		{studio.LoginPath + "?error=1", true, ""},
		{studio.LoginPath + "?error=throttled&retry=42", false, "Wait 42 seconds"},
		{studio.LoginPath + "?error=throttled&retry=-5", false, "Wait 1 seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			r := get(t, e.h, tc.target)
			wantHTML(t, r, http.StatusOK)
			mustContain(t, "login", r.body, `<form method="post" action="/login">`,
				`name="token" type="password"`, "cks studio</a>")
			mustNotContain(t, "login", r.body, "<script") // no event stream before signing in
			if got := strings.Contains(r.body, "That token was not accepted."); got != tc.wantError {
				t.Errorf("error message shown = %v, want %v", got, tc.wantError)
			}
			if got := strings.Contains(r.body, "Too many failed sign-ins"); got != (tc.throttled != "") {
				t.Errorf("throttle notice shown = %v, want %v", got, tc.throttled != "")
			}
			if tc.throttled != "" {
				mustContain(t, "login", r.body, tc.throttled)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	e := newEnv(t)
	r := get(t, e.h, "/no/such/page")
	wantHTML(t, r, http.StatusNotFound)
	mustContain(t, "404 page", r.body, "Page not found", `href="/"`)

	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, asOperator(httptest.NewRequest(http.MethodPost, studio.FragmentPath, nil)))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: status %d, want 405", studio.FragmentPath, rec.Code)
	}
}

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/api"
)

// request is one hand-made HTTP request of the hygiene tests: a browser's
// (cookie, Origin, Sec-Fetch-Site) or a client's (bearer).
type request struct {
	method, path string
	body         io.Reader
	contentType  string
	cookie       string // the studio cookie's value (a session's secret)
	bearer       string
	origin       string
	fetchSite    string // Sec-Fetch-Site
	accept       string
}

func (f *fixture) send(t testing.TB, rq request) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rq.method, f.srv.URL+rq.path, rq.body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if rq.cookie != "" {
		req.AddCookie(&http.Cookie{Name: api.CookieName, Value: rq.cookie})
	}
	if rq.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+rq.bearer)
	}
	if rq.origin != "" {
		req.Header.Set("Origin", rq.origin)
	}
	if rq.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", rq.fetchSite)
	}
	if rq.accept != "" {
		req.Header.Set("Accept", rq.accept)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func (f *fixture) stateOf(t testing.TB, id int64) cks.TaskState {
	t.Helper()
	task, err := f.store.Tasks.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task.State
}

func (f *fixture) enqueue(t testing.TB) cks.Task {
	t.Helper()
	task, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func (f *fixture) taskCount(t testing.TB) int {
	t.Helper()
	n, err := f.store.Tasks.CountTasks(context.Background(), cks.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantError(t testing.TB, resp *http.Response, body string, status int, code string, inMessage ...string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d (%s), want %d %s", resp.StatusCode, body, status, code)
	}
	e := decodeError(t, body)
	if e.Error.Code != code {
		t.Fatalf("error %+v, want code %s", e.Error, code)
	}
	for _, s := range inMessage {
		if !strings.Contains(e.Error.Message, s) {
			t.Fatalf("error message %q does not name %q", e.Error.Message, s)
		}
	}
}

// TestCookieRequestsMustBeSameOrigin: a page on another origin of the same
// site (another port of 127.0.0.1, so SameSite=Strict still sends the
// cookie) cannot stop a task or a sweeper with the studio's cookie, by a form
// or by fetch: the request is refused with 403 cross_origin and nothing
// changes. The studio's own fetch (same-origin) works, and bearer clients need
// no Origin at all.
func TestCookieRequestsMustBeSameOrigin(t *testing.T) {
	f := newFixture(t)
	sess := f.login(t, f.token).Value
	self := f.srv.URL // http://127.0.0.1:PORT
	evil := "http://127.0.0.1:1"
	form := url.Values{"reason": {"pwned"}}.Encode()
	stopBody := `{"reason":"hold","wait":false}`

	refused := []struct {
		name string
		rq   request
	}{
		{"text/plain form, cross-origin", request{contentType: "text/plain", body: strings.NewReader(stopBody), origin: evil, fetchSite: "same-site"}},
		{"urlencoded form, Origin only", request{contentType: "application/x-www-form-urlencoded", body: strings.NewReader(form), origin: evil}},
		{"JSON fetch, same-site", request{contentType: "application/json", body: strings.NewReader(stopBody), origin: evil, fetchSite: "same-site"}},
		{"JSON fetch, cross-site", request{contentType: "application/json", body: strings.NewReader(stopBody), origin: "http://evil.example", fetchSite: "cross-site"}},
		{"no proof of origin at all", request{contentType: "application/json", body: strings.NewReader(stopBody)}},
		{"Origin null", request{contentType: "application/json", body: strings.NewReader(stopBody), origin: "null"}},
		{"Origin of another scheme", request{contentType: "application/json", body: strings.NewReader(stopBody), origin: strings.Replace(self, "http:", "https:", 1)}},
		{"same-origin Origin but cross-site fetch metadata", request{contentType: "application/json", body: strings.NewReader(stopBody), origin: self, fetchSite: "cross-site"}},
	}
	task := f.enqueue(t)
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			rq := c.rq
			rq.method, rq.path, rq.cookie = "POST", "/v1/tasks/"+itoa(task.ID)+"/stop", sess
			resp, body := f.send(t, rq)
			wantError(t, resp, body, http.StatusForbidden, "cross_origin", "cookie")
			if st := f.stateOf(t, task.ID); st != "OPEN" {
				t.Fatalf("task is %s after a refused stop, want OPEN", st)
			}

			rq = c.rq
			rq.body = nil
			rq.method, rq.path, rq.cookie = "POST", "/v1/sweepers/"+sweeper.LeaseReaperID+"/stop", sess
			resp, body = f.send(t, rq)
			wantError(t, resp, body, http.StatusForbidden, "cross_origin")
			if o, err := f.store.Sweepers.GetSweeperDesiredRunning(context.Background(), sweeper.LeaseReaperID); err != nil || o != nil {
				t.Fatalf("sweeper override %v (%v) after a refused stop, want none", o, err)
			}
		})
	}

	// /mcp answers to the cookie too (authed), so the same rule holds there.
	resp, body := f.send(t, request{method: "POST", path: "/mcp", cookie: sess, contentType: "application/json",
		body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), origin: evil, fetchSite: "same-site"})
	wantError(t, resp, body, http.StatusForbidden, "cross_origin")

	// The studio's own fetch, as a browser sends it: stops the task.
	resp, body = f.send(t, request{method: "POST", path: "/v1/tasks/" + itoa(task.ID) + "/stop", cookie: sess,
		contentType: "application/json", body: strings.NewReader(stopBody), origin: self, fetchSite: "same-origin"})
	if resp.StatusCode != http.StatusOK || f.stateOf(t, task.ID) != "STOPPED" {
		t.Fatalf("same-origin stop with the cookie: %d %s, task %s", resp.StatusCode, body, f.stateOf(t, task.ID))
	}
	// A browser without fetch metadata but with a matching Origin (plain
	// http to a non-local host): accepted.
	resp, body = f.send(t, request{method: "POST", path: "/v1/tasks/" + itoa(task.ID) + "/start", cookie: sess, origin: self})
	if resp.StatusCode != http.StatusOK || f.stateOf(t, task.ID) != "OPEN" {
		t.Fatalf("start with the cookie and a same Origin: %d %s", resp.StatusCode, body)
	}
	// Bearer: no Origin needed, and a foreign one changes nothing.
	resp, body = f.send(t, request{method: "POST", path: "/v1/sweepers/" + sweeper.LeaseReaperID + "/stop", bearer: f.token, origin: evil})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer stop of a sweeper with a foreign Origin: %d %s", resp.StatusCode, body)
	}
	// Safe methods need no proof: the studio's pages and fragments load.
	resp, body = f.send(t, request{method: "GET", path: "/v1/tasks/" + itoa(task.ID), cookie: sess})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the cookie and no Origin: %d %s", resp.StatusCode, body)
	}
}

// TestLoginAndLogoutMustBeSameOrigin: a cross-origin form cannot sign a
// browser in (login CSRF: the attacker's token in the victim's studio) or out.
func TestLoginAndLogoutMustBeSameOrigin(t *testing.T) {
	f := newFixture(t)
	sess := f.login(t, f.token).Value
	form := func() io.Reader { return strings.NewReader(url.Values{"token": {f.token}}.Encode()) }
	const ct = "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name              string
		origin, fetchSite string
	}{
		{"cross-site", "http://evil.example", "cross-site"},
		{"same-site other port", "http://127.0.0.1:1", "same-site"},
		{"no proof", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.send(t, request{method: "POST", path: "/login", contentType: ct, body: form(), origin: c.origin, fetchSite: c.fetchSite})
			wantError(t, resp, body, http.StatusForbidden, "cross_origin")
			if len(resp.Cookies()) != 0 {
				t.Fatalf("refused login set cookies %v", resp.Cookies())
			}
			resp, body = f.send(t, request{method: "POST", path: "/logout", cookie: sess, origin: c.origin, fetchSite: c.fetchSite})
			wantError(t, resp, body, http.StatusForbidden, "cross_origin")
			if !f.signedIn(t, sess) {
				t.Fatal("a refused logout ended the session")
			}
		})
	}
	resp, body := f.send(t, request{method: "POST", path: "/login", contentType: ct, body: form(), origin: f.srv.URL, fetchSite: "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(resp.Cookies()) != 1 {
		t.Fatalf("same-origin login: %d %s %v", resp.StatusCode, body, resp.Cookies())
	}
}

// TestJSONEndpointsRefuseOtherContentTypes: a body the API reads as JSON must
// say so; a form's content types (what a cross-site form can send without a
// preflight) are 415 naming application/json, and nothing changes. A call
// without a body needs no Content-Type.
func TestJSONEndpointsRefuseOtherContentTypes(t *testing.T) {
	f := newFixture(t)
	task := f.enqueue(t)
	stop := "/v1/tasks/" + itoa(task.ID) + "/stop"
	for _, c := range []struct {
		name, path, contentType, body string
	}{
		{"create as text/plain", "/v1/tasks", "text/plain", `{"type":"t","title":"y"}`},
		{"create as form", "/v1/tasks", "application/x-www-form-urlencoded", `{"type":"t","title":"y"}`},
		{"create as multipart", "/v1/tasks", "multipart/form-data; boundary=x", `{"type":"t","title":"y"}`},
		{"create without a Content-Type", "/v1/tasks", "", `{"type":"t","title":"y"}`},
		{"stop as text/plain", stop, "text/plain", `{"reason":"r","wait":false}`},
		{"stop as form, empty body", stop, "application/x-www-form-urlencoded", ``},
		{"bad media type", "/v1/tasks", "application/json;;", `{"type":"t","title":"y"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.send(t, request{method: "POST", path: c.path, bearer: f.token, contentType: c.contentType, body: strings.NewReader(c.body)})
			wantError(t, resp, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "application/json")
			if n := f.taskCount(t); n != 1 {
				t.Fatalf("%d tasks after a refused request, want 1", n)
			}
			if st := f.stateOf(t, task.ID); st != "OPEN" {
				t.Fatalf("task %s after a refused request, want OPEN", st)
			}
		})
	}
	resp, body := f.send(t, request{method: "POST", path: "/v1/tasks", bearer: f.token, contentType: "application/json; charset=utf-8",
		body: strings.NewReader(`{"type":"t","title":"y"}`)})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create with a charset parameter: %d %s", resp.StatusCode, body)
	}
	resp, body = f.send(t, request{method: "POST", path: "/v1/sweepers/" + sweeper.LeaseReaperID + "/stop", bearer: f.token})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("body-less sweeper stop without a Content-Type: %d %s", resp.StatusCode, body)
	}
}

// TestOversizedBodiesAre413: a body over the 1 MiB limit is refused whole
// with 413 naming the limit, on every endpoint, before anything is read as
// the request — the 10 MB start no longer starts the task. A body of exactly
// the limit is read.
func TestOversizedBodiesAre413(t *testing.T) {
	f := newFixture(t)
	task := f.enqueue(t)
	if _, err := f.store.Tasks.StopTask(context.Background(), ledger.StopParams{ID: task.ID, Actor: "op", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	id := itoa(task.ID)
	big := func(n int) io.Reader { return bytes.NewReader(bytes.Repeat([]byte(" "), n)) }
	// chunked hides the size until it is read.
	type chunked struct{ io.Reader }
	for _, c := range []struct {
		name, method, path string
		body               io.Reader
	}{
		{"start, 10 MB of white space", "POST", "/v1/tasks/" + id + "/start", big(10 << 20)},
		{"start, limit + 1", "POST", "/v1/tasks/" + id + "/start", big(1<<20 + 1)},
		{"start, chunked", "POST", "/v1/tasks/" + id + "/start", chunked{big(2 << 20)}},
		{"create", "POST", "/v1/tasks", io.MultiReader(strings.NewReader(`{"type":"t","title":"`), big(2<<20), strings.NewReader(`"}`))},
		{"patch", "PATCH", "/v1/tasks/" + id, big(2 << 20)},
		{"token", "POST", "/v1/tokens", big(2 << 20)},
		{"mcp", "POST", "/mcp", big(2 << 20)},
		{"unknown endpoint", "POST", "/v1/nope", big(2 << 20)},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.send(t, request{method: c.method, path: c.path, bearer: f.token, contentType: "application/json", body: c.body})
			wantError(t, resp, body, http.StatusRequestEntityTooLarge, "request_too_large", "limit 1 MiB")
			if st := f.stateOf(t, task.ID); st != "STOPPED" {
				t.Fatalf("task %s after an oversized request, want STOPPED", st)
			}
			if n := f.taskCount(t); n != 1 {
				t.Fatalf("%d tasks after an oversized request, want 1", n)
			}
		})
	}
	exact := `{"reason":"at the limit"}`
	exact += strings.Repeat(" ", 1<<20-len(exact))
	resp, body := f.send(t, request{method: "POST", path: "/v1/tasks/" + id + "/start", bearer: f.token, contentType: "application/json", body: strings.NewReader(exact)})
	if resp.StatusCode != http.StatusOK || f.stateOf(t, task.ID) != "OPEN" {
		t.Fatalf("start with a body of exactly 1 MiB: %d %s", resp.StatusCode, body)
	}
}

// TestBodiesMustBeJSONObjects: `null` (which decodes into a struct without
// error), arrays and scalars are 400 before the handler runs; an empty body
// stays allowed where every field is optional (start).
func TestBodiesMustBeJSONObjects(t *testing.T) {
	f := newFixture(t)
	task := f.enqueue(t)
	if _, err := f.store.Tasks.StopTask(context.Background(), ledger.StopParams{ID: task.ID, Actor: "op", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	id := itoa(task.ID)
	for _, c := range []struct {
		path, body, got string
	}{
		{"/v1/tasks/" + id + "/start", `null`, "null"},
		{"/v1/tasks/" + id + "/start", ` null `, "null"},
		{"/v1/tasks", `null`, "null"},
		{"/v1/tasks/claim", `null`, "null"},
		{"/v1/tasks", `[{"type":"t","title":"y"}]`, "an array"},
		{"/v1/tasks/" + id + "/stop", `"hold"`, "a string"},
		{"/v1/tasks/" + id + "/start", `0`, "a number"},
		{"/v1/tasks/" + id + "/start", `true`, "a boolean"},
	} {
		t.Run(c.path+" "+c.body, func(t *testing.T) {
			resp, body := f.send(t, request{method: "POST", path: c.path, bearer: f.token, contentType: "application/json", body: strings.NewReader(c.body)})
			wantError(t, resp, body, http.StatusBadRequest, "invalid_argument", "expected a JSON object", "got "+c.got)
			if st := f.stateOf(t, task.ID); st != "STOPPED" {
				t.Fatalf("task %s, want STOPPED", st)
			}
			if n := f.taskCount(t); n != 1 {
				t.Fatalf("%d tasks, want 1", n)
			}
		})
	}
	resp, body := f.send(t, request{method: "POST", path: "/v1/tasks/" + id + "/start", bearer: f.token})
	if resp.StatusCode != http.StatusOK || f.stateOf(t, task.ID) != "OPEN" {
		t.Fatalf("start without a body: %d %s", resp.StatusCode, body)
	}
}

// TestClaimEmptyTypesMeansAnyType: `"types":[]`, `null` and an absent types
// all claim a task of any type (ledger.Service.Claim: "any type when types is
// empty"), as README says.
func TestClaimEmptyTypesMeansAnyType(t *testing.T) {
	for _, body := range []string{`{"types":[]}`, `{"types":null}`, `{}`} {
		t.Run(body, func(t *testing.T) {
			f := newFixture(t)
			task, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "whatever", Title: "x"})
			if err != nil {
				t.Fatal(err)
			}
			resp, out := f.send(t, request{method: "POST", path: "/v1/tasks/claim", bearer: f.token, contentType: "application/json", body: strings.NewReader(body)})
			var got cks.ClaimedTasks
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(out), &got) != nil || len(got.Tasks) != 1 || got.Tasks[0].ID != task.ID {
				t.Fatalf("claim %s: %d %s, want task %d", body, resp.StatusCode, out, task.ID)
			}
		})
	}
}

// mcpAccept is the Accept header of an MCP client's request.
const mcpAccept = "application/json, text/event-stream"

// mcpCall is a JSON-RPC request to /mcp as a client sends it.
func mcpCall(method, params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
}

// TestMCPRefusesForeignOrigins: the MCP streamable HTTP transport has the
// server validate Origin on every request (DNS rebinding), so a browser's
// request to /mcp from another origin is 403 cross_origin even with a
// bearer token, on every method, and changes nothing; a request without
// Origin (a client that is no browser) and one from the hub's own origin
// are served.
func TestMCPRefusesForeignOrigins(t *testing.T) {
	f := newHubFixture(t, backendtest.SQLite(t))
	self := f.srv.URL
	create := mcpCall("tools/call", `{"name":"create_task","arguments":{"type":"t","title":"via mcp"}}`)
	initialize := mcpCall("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	for _, c := range []struct {
		name              string
		method, body      string
		origin, fetchSite string
	}{
		{"foreign Origin, tools/call", "POST", create, "http://evil.example", ""},
		{"foreign Origin, initialize", "POST", initialize, "http://evil.example", ""},
		{"another port of the hub's host", "POST", create, "http://127.0.0.1:1", ""},
		{"cross-site fetch metadata", "POST", create, "", "cross-site"},
		{"same-site fetch metadata", "POST", create, "http://127.0.0.1:1", "same-site"},
		{"foreign Origin, GET stream", "GET", "", "http://evil.example", ""},
		{"foreign Origin, DELETE", "DELETE", "", "http://evil.example", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rq := request{method: c.method, path: "/mcp", bearer: f.token, origin: c.origin, fetchSite: c.fetchSite, accept: mcpAccept}
			if c.body != "" {
				rq.contentType, rq.body = "application/json", strings.NewReader(c.body)
			}
			resp, body := f.send(t, rq)
			wantError(t, resp, body, http.StatusForbidden, "cross_origin", "/mcp")
			if n := f.taskCount(t); n != 0 {
				t.Fatalf("%d tasks after a refused /mcp request, want 0", n)
			}
		})
	}
	for i, c := range []struct{ origin, fetchSite string }{{"", ""}, {self, ""}, {self, "same-origin"}} {
		resp, body := f.send(t, request{method: "POST", path: "/mcp", bearer: f.token, contentType: "application/json",
			body: strings.NewReader(create), origin: c.origin, fetchSite: c.fetchSite, accept: mcpAccept})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "via mcp") || f.taskCount(t) != i+1 {
			t.Fatalf("tools/call with Origin %q, Sec-Fetch-Site %q: %d %s (%d tasks), want 200 and the task created",
				c.origin, c.fetchSite, resp.StatusCode, body, f.taskCount(t))
		}
	}
}

// TestUnauthenticatedBodyIsNotAwaited: the headers authenticate a request
// before its body is read, so a request without a valid token whose body
// never ends gets its 401 at once (not after the server's read timeout),
// on every authenticated endpoint, and a bad token likewise.
func TestUnauthenticatedBodyIsNotAwaited(t *testing.T) {
	f := newHubFixture(t, backendtest.SQLite(t))
	for _, c := range []struct{ name, path, token string }{
		{"create without a token", "/v1/tasks", ""},
		{"stop with a bad token", "/v1/tasks/1/stop", "cks_not-a-token"},
		{"mcp without a token", "/mcp", ""},
		{"unknown /v1 endpoint", "/v1/nothing", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The body never completes while the test waits for its
			// answer: only the deadline ends it (the client would
			// otherwise wait for its own body too).
			body, feed := io.Pipe()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			context.AfterFunc(ctx, func() { feed.CloseWithError(ctx.Err()) })
			req, err := http.NewRequestWithContext(ctx, "POST", f.srv.URL+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer while the body is pending (the server waits for it): %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			wantError(t, resp, string(b), http.StatusUnauthorized, "unauthenticated")
		})
	}
	// An authenticated request's body is read as before.
	resp, b := f.send(t, request{method: "POST", path: "/v1/tasks", bearer: f.token, contentType: "application/json",
		body: strings.NewReader(`{"type":"t","title":"read"}`)})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("authenticated create: %d %s", resp.StatusCode, b)
	}
}

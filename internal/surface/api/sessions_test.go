package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
)

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// postLogin posts the studio's login form with tok, as the browser does,
// and returns the answer.
func postLogin(t testing.TB, base, tok string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// studioCookie is the studio cookie resp sets, or nil.
func studioCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == api.CookieName {
			return c
		}
	}
	return nil
}

// login signs in with tok and returns the session cookie.
func (f *fixture) login(t testing.TB, tok string) *http.Cookie {
	t.Helper()
	resp := postLogin(t, f.srv.URL, tok)
	c := studioCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || c == nil || c.Value == "" {
		t.Fatalf("login: %d to %q, cookie %+v; want 303 to / with a cookie", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	return c
}

// withCookie sends method path with the studio cookie value (and the
// same-origin proof a browser's studio page sends).
func (f *fixture) withCookie(t testing.TB, method, path, value string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: api.CookieName, Value: value})
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return roundTrip(t, req)
}

// roundTrip sends req without following redirects and reads the answer.
func roundTrip(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signedIn reports whether the cookie value signs in: a studio page (200,
// not a redirect to /login) and an API read (200, not 401).
func (f *fixture) signedIn(t testing.TB, value string) bool {
	t.Helper()
	page, _ := f.withCookie(t, "GET", "/", value)
	read, body := f.withCookie(t, "GET", "/v1/processes", value)
	switch {
	case page.StatusCode == http.StatusOK && read.StatusCode == http.StatusOK:
		return true
	case page.StatusCode == http.StatusSeeOther && page.Header.Get("Location") == "/login" && read.StatusCode == http.StatusUnauthorized:
		return false
	}
	t.Fatalf("cookie %q: page %d (%s), read %d %s", value, page.StatusCode, page.Header.Get("Location"), read.StatusCode, body)
	return false
}

// TestSessions (issue 22, finding 3), on both backends: the login cookie is
// a session, not the token; it signs in until logout, after which the same
// value is refused; a bearer token in the cookie signs nothing in; the
// session expires by the clock; admins list sessions without secrets and
// revoke them; revoking the principal ends its sessions.
func TestSessions(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		ctx := context.Background()

		c := f.login(t, f.token)
		if c.Value == f.token || strings.Contains(c.Value, f.token) {
			t.Fatal("the login cookie carries the bearer token")
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != int(auth.SessionTTL.Seconds()) {
			t.Fatalf("login cookie = %+v, want HttpOnly, SameSite=Strict, Path=/, MaxAge %v", c, auth.SessionTTL)
		}
		if c.Secure {
			t.Fatal("the cookie is Secure over plain HTTP: the browser would never send it back")
		}
		if !f.signedIn(t, c.Value) {
			t.Fatal("the session cookie does not sign in")
		}

		// The bearer token in the cookie: no longer a credential.
		if f.signedIn(t, f.token) {
			t.Fatal("a bearer token in the cookie still signs in")
		}
		// Authorization keeps working as it did.
		if resp, body := f.get(t, "/v1/processes", f.token); resp.StatusCode != http.StatusOK {
			t.Fatalf("bearer read: %d %s", resp.StatusCode, body)
		}

		// The list shows the session, never its secret or its hash.
		resp, body := f.get(t, "/v1/sessions", f.token)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/sessions: %d %s", resp.StatusCode, body)
		}
		var list struct {
			Sessions []map[string]any `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Sessions) != 1 {
			t.Fatalf("sessions = %s (%v), want one", body, err)
		}
		s := list.Sessions[0]
		if s["principal_name"] != "admin" || s["id"] == "" || s["principal_id"] == "" || s["created_at"] == nil || s["expires_at"] == nil {
			t.Fatalf("session listed as %v", s)
		}
		if len(s) != 5 || strings.Contains(body, c.Value) || strings.Contains(body, auth.HashToken(c.Value)) {
			t.Fatalf("the listing shows more than the session's id, principal and times: %s", body)
		}

		// Logout deletes the session: the same value, replayed, is refused.
		resp, _ = f.withCookie(t, "POST", "/logout", c.Value)
		if resp.StatusCode != http.StatusSeeOther || studioCookie(resp) == nil || studioCookie(resp).MaxAge >= 0 {
			t.Fatalf("logout: %d, cookie %+v; want 303 and the cookie dropped", resp.StatusCode, studioCookie(resp))
		}
		if f.signedIn(t, c.Value) {
			t.Fatal("the cookie still signs in after logout")
		}
		if ss, err := listSessions(ctx, f); err != nil || len(ss) != 0 {
			t.Fatalf("sessions after logout: %+v, %v; want none", ss, err)
		}

		// Expiry, by the clock: signed in until the TTL has passed.
		c = f.login(t, f.token)
		f.clock.Advance(auth.SessionTTL - time.Second)
		if !f.signedIn(t, c.Value) {
			t.Fatal("the session ended before its TTL")
		}
		f.clock.Advance(time.Second)
		if f.signedIn(t, c.Value) {
			t.Fatal("an expired session still signs in")
		}
		if ss, _ := listSessions(ctx, f); len(ss) != 0 {
			t.Fatalf("the expired session was not deleted: %+v", ss)
		}

		// revoke_session by id.
		c = f.login(t, f.token)
		ss, _ := listSessions(ctx, f)
		if len(ss) != 1 {
			t.Fatalf("sessions: %+v", ss)
		}
		if status, body := f.do(t, f.token, "DELETE", "/v1/sessions/"+ss[0].ID, ""); status != http.StatusNoContent {
			t.Fatalf("revoke_session: %d %s", status, body)
		}
		if f.signedIn(t, c.Value) {
			t.Fatal("a revoked session still signs in")
		}
		if status, body := f.do(t, f.token, "DELETE", "/v1/sessions/"+ss[0].ID, ""); status != http.StatusNotFound ||
			decodeError(t, body).Error.Code != "not_found" {
			t.Fatalf("revoke_session again: %d %s, want 404 not_found", status, body)
		}

		// Revoking the principal ends its sessions. (A second admin, as the
		// last one cannot be revoked.)
		_, viewer, err := auth.CreateToken(ctx, f.store.Principals, f.clock, "viewer", []cks.Grant{{Resource: "/", Permission: auth.PermRead}})
		if err != nil {
			t.Fatal(err)
		}
		vc := f.login(t, viewer)
		if !f.signedIn(t, vc.Value) {
			t.Fatal("the viewer's session does not sign in")
		}
		// A reader may not list sessions.
		resp, body = f.get(t, "/v1/sessions", viewer)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "admin")
		var vid string
		ss, _ = listSessions(ctx, f)
		for _, s := range ss {
			if s.PrincipalName == "viewer" {
				vid = s.PrincipalID
			}
		}
		if status, body := f.do(t, f.token, "DELETE", "/v1/tokens/"+vid, ""); status != http.StatusNoContent {
			t.Fatalf("revoke_token: %d %s", status, body)
		}
		if f.signedIn(t, vc.Value) {
			t.Fatal("the session of a revoked principal still signs in")
		}
	})
}

// listSessions is every session of f's store (one page of the most).
func listSessions(ctx context.Context, f *fixture) ([]cks.Session, error) {
	page, err := f.store.Principals.ListSessions(ctx, cks.ListSessionsInput{Limit: cks.MaxListLimit})
	return page.Sessions, err
}

// TestSessionsBounded (issue 38.6), on both backends: a token that may
// read one task signs in again and again — it keeps
// auth.MaxSessionsPerPrincipal sessions, each new one signing in and its
// oldest signed out (on main it kept every one: 20,000 in 12 s); GET
// /v1/sessions answers a page, at most its limit, with the total and a
// cursor that walks every session once.
func TestSessionsBounded(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		ctx := context.Background()
		_, reader, err := auth.CreateToken(ctx, f.store.Principals, f.clock, "one-task", []cks.Grant{{Resource: "/tasks/1", Permission: auth.PermRead}})
		if err != nil {
			t.Fatal(err)
		}
		const signIns = 3 * auth.MaxSessionsPerPrincipal
		var cookies []*http.Cookie
		for range signIns {
			cookies = append(cookies, f.login(t, reader))
			f.clock.Advance(time.Second)
		}
		f.login(t, f.token)
		authenticates := func(c *http.Cookie) bool {
			resp, _ := f.withCookie(t, "GET", "/v1/tasks/1", c.Value)
			return resp.StatusCode == http.StatusNotFound // read allowed: no task 1
		}
		// The newest MaxSessionsPerPrincipal, and two before them (more
		// refusals would be throttled).
		for i := signIns - auth.MaxSessionsPerPrincipal - 2; i < signIns; i++ {
			if want := i >= signIns-auth.MaxSessionsPerPrincipal; authenticates(cookies[i]) != want {
				t.Fatalf("after %d sign-ins, the %d-th: signed in %v, want %v (the newest %d are)", signIns, i+1, !want, want, auth.MaxSessionsPerPrincipal)
			}
		}
		want := auth.MaxSessionsPerPrincipal + 1
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			resp, body := f.get(t, "/v1/sessions?limit=5&cursor="+url.QueryEscape(cursor), f.token)
			var page cks.SessionList
			if err := json.Unmarshal([]byte(body), &page); resp.StatusCode != http.StatusOK || err != nil {
				t.Fatalf("GET /v1/sessions: %d %v %s", resp.StatusCode, err, body)
			}
			if len(page.Sessions) > 5 || page.Total != want || pages > want {
				t.Fatalf("page %d: %d sessions, total %d; want at most 5, total %d", pages, len(page.Sessions), page.Total, want)
			}
			for _, x := range page.Sessions {
				if seen[x.ID] {
					t.Fatalf("session %s listed twice", x.ID)
				}
				seen[x.ID] = true
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if len(seen) != want {
			t.Fatalf("the pages hold %d sessions, want %d", len(seen), want)
		}
		resp, body := f.get(t, "/v1/sessions?limit=0x", f.token)
		wantError(t, resp, body, http.StatusBadRequest, "invalid_argument", "limit")
	})
}

// TestSecureCookie (issue 38.9): behind a TLS-terminating proxy the hub
// sees plain HTTP, so the studio cookie's Secure attribute comes from the
// configuration — always with SecureCookie, and with TrustedProxies when a
// trusted proxy's X-Forwarded-Proto says https (the header of any other
// client is ignored) — on the cookie a sign-in sets and the one a sign-out
// clears. On main it was never Secure over HTTP.
func TestSecureCookie(t *testing.T) {
	st, err := backend.Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := datadir.Dir(t.TempDir())
	if _, err := auth.EnsureAdminToken(context.Background(), st.Principals, dir, clock.System{}); err != nil {
		t.Fatal(err)
	}
	tok, err := dir.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	elsewhere := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		name    string
		secure  bool
		proxies []netip.Prefix
		proto   string
		want    bool
	}{
		{"plain HTTP", false, nil, "", false},
		{"a forwarded proto without trusted proxies", false, nil, "https", false},
		{"a forwarded proto from a proxy not trusted", false, elsewhere, "https", false},
		{"a trusted proxy without the header", false, loopback, "", false},
		{"a trusted proxy saying http", false, loopback, "http", false},
		{"a trusted proxy saying https", false, loopback, "https", true},
		{"a trusted proxy's list, https first", false, loopback, "https, http", true},
		{"the setting", true, nil, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := api.New(api.Config{Services: &ops.Services{Principals: st.Principals, Clock: clock.System{}}, Version: "test",
				SecureCookie: c.secure, TrustedProxies: c.proxies,
				Studio: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "studio") })})
			srv := httptest.NewServer(a)
			t.Cleanup(srv.Close)
			req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			if c.proto != "" {
				req.Header.Set("X-Forwarded-Proto", c.proto)
			}
			resp, _ := roundTrip(t, req)
			in := studioCookie(resp)
			if in == nil || in.Value == "" || in.Secure != c.want {
				t.Fatalf("sign-in cookie %+v, want Secure=%v", in, c.want)
			}
			req, _ = http.NewRequest("POST", srv.URL+"/logout", nil)
			req.AddCookie(&http.Cookie{Name: api.CookieName, Value: in.Value})
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			if c.proto != "" {
				req.Header.Set("X-Forwarded-Proto", c.proto)
			}
			resp, _ = roundTrip(t, req)
			if out := studioCookie(resp); out == nil || out.MaxAge >= 0 || out.Secure != c.want {
				t.Fatalf("sign-out cookie %+v, want it dropped with Secure=%v", out, c.want)
			}
		})
	}
}

// TestLoginRefusesClaimCredentials: a claim's task credential, bound to a
// lease, opens no session (it would outlive the lease).
func TestLoginRefusesClaimCredentials(t *testing.T) {
	f := newFixture(t)
	task := f.enqueue(t)
	_, tok := backendtest.ClaimAgent(t, f.store, "w", task.Type)
	resp := postLogin(t, f.srv.URL, tok)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?error=1" || studioCookie(resp) != nil {
		t.Fatalf("login with a claim credential: %d to %q, cookie %+v", resp.StatusCode, resp.Header.Get("Location"), studioCookie(resp))
	}
}

// lockedBuffer is a log sink tests read while the API writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// throttleHub is an API on SQLite with a fake clock and its log in a buffer.
type throttleHub struct {
	srv   *httptest.Server
	clock *clock.Fake
	log   *lockedBuffer
	token string
}

func newThrottleHub(t *testing.T, cfg api.Config) *throttleHub {
	t.Helper()
	c := clock.NewFake(backendtest.T0)
	dir := datadir.Dir(t.TempDir())
	s, err := backend.Open(context.Background(), filepath.Join(string(dir), "cks.db"), driver.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.EnsureAdminToken(context.Background(), s.Principals, dir, c); err != nil {
		t.Fatal(err)
	}
	tok, _ := dir.ReadToken()
	log := &lockedBuffer{}
	cfg.Services = &ops.Services{Liveness: liveness.NewService(s.Driver(), c), Principals: s.Principals, Clock: c}
	cfg.Logger = slog.New(slog.NewJSONHandler(log, nil))
	cfg.Studio = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "studio "+r.URL.Path) })
	srv := httptest.NewServer(api.New(cfg))
	t.Cleanup(func() { srv.Close(); s.Close() })
	return &throttleHub{srv: srv, clock: c, log: log, token: tok}
}

func (h *throttleHub) bearer(t *testing.T, tok string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+"/v1/processes", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	return roundTrip(t, req)
}

// TestFailedAuthThrottled (issue 22, finding 7): the 11th bad token within
// a minute from one address gets 429 with Retry-After and a JSON error, a
// valid token from it still works, and after the window bad tokens get
// 401 again; the security event is logged once per address and window.
func TestFailedAuthThrottled(t *testing.T) {
	h := newThrottleHub(t, api.Config{})
	bad, _ := auth.NewToken()
	for i := range api.DefaultFailureLimit {
		if resp, body := h.bearer(t, bad); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d %s, want 401", i+1, resp.StatusCode, body)
		}
	}
	h.clock.Advance(20 * time.Second)
	resp, body := h.bearer(t, bad)
	wantError(t, resp, body, http.StatusTooManyRequests, "too_many_auth_failures", "try again in 40 s")
	if ra := resp.Header.Get("Retry-After"); ra != "40" {
		t.Fatalf("Retry-After = %q, want 40 (the rest of the window)", ra)
	}
	// A malformed header and a bad cookie are failures too.
	req, _ := http.NewRequest("GET", h.srv.URL+"/v1/processes", nil)
	req.Header.Set("Authorization", "Basic x")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("malformed Authorization while throttled: %d, want 429", resp.StatusCode)
	}
	// Valid credentials from the throttled address are served.
	if resp, body := h.bearer(t, h.token); resp.StatusCode != http.StatusOK {
		t.Fatalf("the admin token while its address is throttled: %d %s", resp.StatusCode, body)
	}
	if n := len(h.log.lines("auth_failures")); n != 1 {
		t.Fatalf("%d security log lines in the window, want 1:\n%s", n, strings.Join(h.log.lines(""), "\n"))
	}
	line := h.log.lines("auth_failures")[0]
	for _, want := range []string{`"ip":"127.0.0.1"`, `"count":11`, `"window":60000000000`} {
		if !strings.Contains(line, want) {
			t.Fatalf("security log line %s lacks %s", line, want)
		}
	}

	// The window passes: answered normally again, and a new window logs anew.
	h.clock.Advance(40 * time.Second)
	for i := range api.DefaultFailureLimit {
		if resp, body := h.bearer(t, bad); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("after the window, bad token %d: %d %s, want 401", i+1, resp.StatusCode, body)
		}
	}
	for range 3 {
		if resp, _ := h.bearer(t, bad); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("over the limit in the second window: %d, want 429", resp.StatusCode)
		}
	}
	if n := len(h.log.lines("auth_failures")); n != 2 {
		t.Fatalf("%d security log lines after two windows, want 2", n)
	}
	// Requests without any credential are no attempts: 401, never counted.
	h.clock.Advance(time.Minute)
	for range 2 * api.DefaultFailureLimit {
		resp, err := noRedirects.Get(h.srv.URL + "/v1/processes")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no credential: %d, want 401", resp.StatusCode)
		}
	}
}

// TestFailedLoginThrottled: past the limit, a wrong token in the login
// form is sent back to the form saying to wait (with Retry-After), as is a
// page with a bad cookie; the right token still signs in; after the window
// the form answers as before.
func TestFailedLoginThrottled(t *testing.T) {
	h := newThrottleHub(t, api.Config{FailureLimit: 3, FailureWindow: 10 * time.Second})
	for i := range 3 {
		if resp := postLogin(t, h.srv.URL, "wrong"); resp.Header.Get("Location") != "/login?error=1" {
			t.Fatalf("bad login %d: %d to %q", i+1, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp := postLogin(t, h.srv.URL, "wrong")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?error=throttled&retry=10" ||
		resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("throttled login: %d to %q, Retry-After %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Retry-After"))
	}
	if resp := postLogin(t, h.srv.URL, h.token); resp.Header.Get("Location") != "/" || studioCookie(resp) == nil {
		t.Fatalf("good login while throttled: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A stale cookie on a page: the form too.
	req, _ := http.NewRequest("GET", h.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: api.CookieName, Value: "stale"})
	page, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if loc := page.Header.Get("Location"); !strings.HasPrefix(loc, "/login?error=throttled") {
		t.Fatalf("a page with a bad cookie while throttled: %d to %q", page.StatusCode, loc)
	}
	h.clock.Advance(10 * time.Second)
	if resp := postLogin(t, h.srv.URL, "wrong"); resp.Header.Get("Location") != "/login?error=1" {
		t.Fatalf("after the window: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := len(h.log.lines("auth_failures")); n != 1 {
		t.Fatalf("%d security log lines, want 1", n)
	}
}

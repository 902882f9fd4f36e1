package studio_test

// The access page (ADR 0020's ACL permissions in the console): the
// principals with their grants, creating a token with grants, revoking a
// principal or a studio session.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// TestAccessPage: on both backends, an admin's access page lists every
// principal with its grants (a claim's credential marked with its task),
// the studio sessions with their principal, the create form with every
// permission, and revoke controls; the header links it. A principal
// without admin on / gets the 403 page naming the permission, and no link.
func TestAccessPage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		ctx := context.Background()
		h := studio.New(&ops.Services{Tasks: b.Tasks, Principals: b.Principals}, studio.Options{Version: "v-test"})
		stopper, _, err := auth.CreateToken(ctx, b.Principals, nil, "night-operator",
			[]cks.Grant{{Resource: "/tasks", Permission: auth.PermStop}, {Resource: "/tasks", Permission: auth.PermRead}})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Principals.CreateSession(ctx, cks.Session{ID: "sess-night", PrincipalID: stopper.ID,
			CreatedAt: backendtest.T0, ExpiresAt: backendtest.T0.Add(time.Hour)}, "secret-night"); err != nil {
			t.Fatal(err)
		}
		r := get(t, h, studio.AccessPath)
		wantHTML(t, r, http.StatusOK)
		row := rowFrom(t, r.body, fmt.Sprintf(`data-principal="%s"`, stopper.ID))
		mustContain(t, "the stopper's row", row, "night-operator", "<code>stop</code> on <code>/tasks</code>",
			"<code>read</code> on <code>/tasks</code>", fmt.Sprintf(`data-access-revoke="token" data-id="%s" data-name="night-operator">Revoke`, stopper.ID))
		sess := rowFrom(t, r.body, `data-session="sess-night"`)
		mustContain(t, "the session's row", sess, "night-operator", `data-access-revoke="session" data-id="sess-night"`)
		for _, p := range auth.Permissions {
			mustContain(t, "the create form", r.body, fmt.Sprintf(`<option value="%s">%s</option>`, p, p))
		}
		mustContain(t, "the create form", r.body, `data-access-create`, `name="task_id"`, `data-access-create-button>Create token`)
		mustContain(t, "the header", r.body, `<a href="/access" aria-current="page">Access</a>`)
		mustNotContain(t, "admin's page", r.body, `disabled title="forbidden`)

		reader := as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead})
		f := getAs(t, h, studio.AccessPath, reader)
		if f.status != http.StatusForbidden {
			t.Fatalf("a reader's access page: %d, want 403", f.status)
		}
		mustContain(t, "a reader's access page", f.body, `principal &#34;viewer&#34; needs admin on /`)
		mustNotContain(t, "a reader's access page", f.body, "night-operator")
		mustNotContain(t, "a reader's board", getAs(t, h, "/tasks", reader).body, `href="/access"`)
	})
}

// TestAccessPageSessionsBounded (issue 38.6): with more sessions than the
// access page shows, it lists the newest 100 and says how many there are
// (on main it listed every one: 11.5 MB for 20,000). Both backends.
func TestAccessPageSessionsBounded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		ctx := context.Background()
		h := studio.New(&ops.Services{Tasks: b.Tasks, Principals: b.Principals}, studio.Options{Version: "v-test"})
		total := 0
		for p := range 8 {
			pr, _, err := auth.CreateToken(ctx, b.Principals, nil, fmt.Sprintf("browser-%d", p), []cks.Grant{{Resource: "/", Permission: auth.PermRead}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range auth.MaxSessionsPerPrincipal {
				at := backendtest.T0.Add(time.Duration(p*100+i) * time.Second)
				id := fmt.Sprintf("s-%d-%02d", p, i)
				if err := b.Principals.CreateSession(ctx, cks.Session{ID: id, PrincipalID: pr.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}, "secret-"+id); err != nil {
					t.Fatal(err)
				}
				total++
			}
		}
		r := get(t, h, studio.AccessPath)
		wantHTML(t, r, http.StatusOK)
		if n := strings.Count(r.body, `<tr data-session=`); n != 100 {
			t.Fatalf("the access page lists %d sessions, want the newest 100 of %d", n, total)
		}
		mustContain(t, "the sessions section", r.body, fmt.Sprintf(`<span class="count">%d</span>`, total),
			fmt.Sprintf("The newest 100 of %d are shown", total), `data-session="s-7-15"`)
		mustNotContain(t, "the sessions section", r.body, `data-session="s-0-00"`)
	})
}

// rowFrom returns the table row of body that starts with marker.
func rowFrom(t *testing.T, body, marker string) string {
	t.Helper()
	i := strings.Index(body, marker)
	if i < 0 {
		t.Fatalf("no row %q in\n%s", marker, body)
	}
	return body[i : i+strings.Index(body[i:], "</tr>")]
}

// TestBrowserAccess: on both backends, the admin creates a token in the
// access page's form with two grants; the token, shown once, authenticates
// with exactly those grants (it may read and stop tasks, not start them),
// and its principal is listed; a grant the service refuses is its message
// under the form. Revoking the principal from its row makes the token stop
// authenticating, and signing out a session from the sessions table ends
// that browser's session.
func TestBrowserAccess(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		task := h.createTask(t, cks.NewTask{Type: "build", Title: "Held by the night operator"})
		other := newTab(t, 0) // a second browser, signed in, whose session the admin ends
		other.signIn(h, h.Token)
		otherSession := other.cookie(api.CookieName)

		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(
			click(chromedp.CSS(`nav a[href="/access"]`)),
			waitVisible(chromedp.ID("token-name")),
		)
		js[bool](tb, `window.cksNoConfirm = true`) // no confirm dialog: the test clicks for the operator
		// A bad grant: the service's refusal, naming the field.
		tb.do(
			chromedp.SendKeys(chromedp.ID("token-name"), "night-operator"),
			chromedp.SetValue(chromedp.ID("grant-perm-0"), "stop"),
			chromedp.SendKeys(chromedp.ID("grant-res-0"), "tasks"),
			click(chromedp.CSS(`[data-access-create-button]`)),
		)
		tb.waitTrue("the refusal under the form", `!document.querySelector("form[data-access-create] [data-action-error]").hidden`)
		if got := tb.text(`form[data-access-create] [data-action-error]`); !strings.Contains(got, "resource") {
			t.Errorf("refusal of a resource without /: %q", got)
		}
		tb.do(
			chromedp.SetValue(chromedp.ID("grant-res-0"), "/tasks"),
			chromedp.SetValue(chromedp.ID("grant-perm-1"), "read"),
			chromedp.SendKeys(chromedp.ID("grant-res-1"), "/tasks"),
			click(chromedp.CSS(`[data-access-create-button]`)),
		)
		tb.waitTrue("the new token shown", `!document.querySelector("[data-new-token]").hidden`)
		token := tb.text(`[data-new-token-value]`)
		id := js[string](tb, `document.querySelector("[data-new-token]").dataset.newPrincipal`)
		tb.waitTrue("the new principal listed", fmt.Sprintf(`!!document.querySelector('tr[data-principal=%q]')`, id))
		if got := tb.text(fmt.Sprintf(`[data-principal=%q]`, id)); !strings.Contains(got, "night-operator") ||
			!strings.Contains(got, "stop on /tasks") || !strings.Contains(got, "read on /tasks") {
			t.Errorf("the new principal's row: %q", got)
		}

		as := consoleHub{URL: h.URL, Token: token}
		if code, out := as.api(t, http.MethodGet, fmt.Sprintf("/v1/tasks/%d", task.ID), ""); code != http.StatusOK {
			t.Errorf("the new token reads a task: %d %s", code, out)
		}
		if code, out := as.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", task.ID), `{"reason":"night hold"}`); code != http.StatusOK {
			t.Errorf("the new token stops a task: %d %s", code, out)
		}
		if code, out := as.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/start", task.ID), `{}`); code != http.StatusForbidden {
			t.Errorf("the new token starts a task: %d %s, want 403 (stop does not imply start)", code, out)
		}

		tb.do(click(chromedp.CSS(fmt.Sprintf(`[data-principal=%q] button[data-access-revoke]`, id))))
		tb.waitTrue("the revoked principal gone from the list", fmt.Sprintf(`!document.querySelector('tr[data-principal=%q]')`, id))
		if code, _ := as.api(t, http.MethodGet, fmt.Sprintf("/v1/tasks/%d", task.ID), ""); code != http.StatusUnauthorized {
			t.Errorf("the revoked token: %d, want 401", code)
		}

		// Sign the other browser's session out.
		var sessions cks.SessionList
		code, out := h.api(t, http.MethodGet, "/v1/sessions", "")
		if err := json.Unmarshal([]byte(out), &sessions); code != http.StatusOK || err != nil || len(sessions.Sessions) != 2 {
			t.Fatalf("list_sessions: %d %s %v", code, out, err)
		}
		first := sessions.Sessions[1].ID // the other browser signed in first (listed newest first)
		tb.do(chromedp.Navigate(h.URL+"/access"), waitVisible(chromedp.ID("sessions-heading")))
		js[bool](tb, `window.cksNoConfirm = true`)
		tb.do(click(chromedp.CSS(fmt.Sprintf(`[data-session=%q] button[data-access-revoke]`, first))))
		tb.waitTrue("the session gone from the list", fmt.Sprintf(`!document.querySelector('[data-session=%q]')`, first))
		req, _ := http.NewRequest(http.MethodGet, h.URL+"/v1/processes", nil)
		req.AddCookie(&http.Cookie{Name: api.CookieName, Value: otherSession})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("the signed-out session: %d, want 401", res.StatusCode)
		}
		other.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.ID("token")))
	})
}

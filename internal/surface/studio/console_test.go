package studio_test

// Browser tests of the console's basics: sign-in, sign-out, the Agent
// Panel over a real agent, and the refusal of a cross-origin form POST.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
)

// startAgent runs an agent of kind in this process over a second handle on
// h's database, as `cks agent KIND` would over its own: it reports liveness
// and obeys a stop request. It returns the agent's instance id and a
// channel that receives Run's result when the agent exits.
func startAgent(t testing.TB, h consoleHub, kind string) (string, <-chan error) {
	t.Helper()
	b, err := backend.Open(context.Background(), h.Database)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	done := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		err := agents.Run(ctx, agents.ServicesOf(b), agents.Settings{Kind: kind, LivenessInterval: time.Second,
			PollInterval: time.Second, HeartbeatInterval: time.Second}, nil,
			agents.Options{Started: func(r *liveness.Reporter) { started <- r.InstanceID() }})
		done <- err
		exited <- err
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		b.Close()
	})
	select {
	case id := <-started:
		return id, exited
	case err := <-done:
		t.Fatalf("agent %s: %v", kind, err)
	case <-time.After(browserWait):
		t.Fatalf("agent %s: no first heartbeat within %s", kind, browserWait)
	}
	return "", nil
}

// TestBrowserSignIn: a refused token says so on the form; the admin token
// signs in to the Agent Panel, whose title and header name the page and
// the principal.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	tb := newTab(t, 0)
	tb.do(
		chromedp.Navigate(h.URL+"/"),
		waitVisible(chromedp.ID("token")), // sent to sign in
		chromedp.SendKeys(chromedp.ID("token"), "not-a-token"),
		chromedp.Submit(chromedp.ID("token")),
		waitVisible(chromedp.CSS(`.login .notice--error`)),
	)
	if got := tb.text(`.login .notice--error`); !strings.Contains(got, "not accepted") {
		t.Errorf("refused token: notice %q", got)
	}
	tb.signIn(h, h.Token)
	if title := value(tb, chromedp.Title()); title != "Agent Panel · cks studio" {
		t.Errorf("title %q", title)
	}
	if got := tb.text(`.who`); got != "admin" {
		t.Errorf("signed in as %q, want admin", got)
	}
	if got := tb.text(`nav [aria-current=page]`); got != "Agent Panel" {
		t.Errorf("current nav link %q", got)
	}
}

// TestBrowserSignOut: Sign out ends the session: the browser is on the
// login form with no session cookie, and the session it had no longer
// signs anything in.
func TestBrowserSignOut(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	tb := newTab(t, 0)
	tb.signIn(h, h.Token)
	session := tb.cookie(api.CookieName)
	if session == "" {
		t.Fatal("signed in without a session cookie")
	}
	tb.do(
		click(chromedp.CSS(`[data-signout]`)),
		waitVisible(chromedp.ID("token")),
	)
	if got := tb.cookie(api.CookieName); got != "" {
		t.Errorf("the session cookie is still set after sign-out")
	}
	tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.ID("token")))
	// The session itself is gone, not only the browser's cookie.
	req, err := http.NewRequest(http.MethodGet, h.URL+"/v1/processes", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: api.CookieName, Value: session})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out session still authenticates: %d", res.StatusCode)
	}
}

// TestBrowserPanelStopsAnAgent: the Agent Panel shows a running agent's
// card live; its Stop button asks first (nothing starts a process again),
// a dismissed question sends nothing, a confirmed one makes the agent
// exit, and the card turns stopped without a reload, where it was (not
// into the collapsed earlier instances).
func TestBrowserPanelStopsAnAgent(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	id, exited := startAgent(t, h, "critic")
	tb := newTab(t, 0)
	tb.signIn(h, h.Token)
	card := fmt.Sprintf(`[data-process-card=%q]`, id)
	tb.do(waitVisible(chromedp.CSS(card + ` [data-process-stop]`)))
	if got := tb.text(card + ` .kind`); got != "critic" {
		t.Errorf("card kind %q", got)
	}
	tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
	js[bool](tb, `window.cksNoReload = true`)
	dl := tb.answerDialogs()
	dl.setAccept(false)
	tb.do(click(chromedp.CSS(card + ` [data-process-stop]`)))
	if msg := dl.wait(t, 1); !strings.Contains(msg, "critic process "+id) || !strings.Contains(msg, "nothing starts it again") {
		t.Errorf("the Stop confirmation says %q", msg)
	}
	if !js[bool](tb, fmt.Sprintf(`(() => { const b = document.querySelector(%q); return !!b && !b.disabled && b.textContent === "Stop"; })()`, card+` [data-process-stop]`)) {
		t.Fatal("a dismissed Stop was sent anyway")
	}
	dl.setAccept(true)
	tb.do(click(chromedp.CSS(card + ` [data-process-stop]`)))
	dl.wait(t, 2)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("agent exited with %v", err)
		}
	case <-time.After(browserWait):
		t.Fatal("the agent did not exit within " + browserWait.String() + " of the Stop click")
	}
	tb.waitTrue("the card reads stopped", fmt.Sprintf(`!!document.querySelector(%q)`, card+`.card--stopped`))
	if js[bool](tb, fmt.Sprintf(`!!document.querySelector(%q)`, `details.history `+card)) {
		t.Error("the stopped card went into the collapsed earlier instances instead of staying in place")
	}
	if !js[bool](tb, `window.cksNoReload === true`) {
		t.Error("the page reloaded to show the stop; it should follow it live")
	}
}

// TestBrowserCrossOriginPostRefused: a page of another origin on the same
// site (another port of 127.0.0.1, so the browser sends the session
// cookie) posts forms to a console action and to /logout; the hub refuses
// both (403 cross_origin), the agent is not asked to stop and the session
// stands.
func TestBrowserCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	h := startHub(t, "sqlite", nil)
	id, _ := startAgent(t, h, "critic")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title>
<form id="stop" method="post" action="%[1]s/v1/processes/%[2]s/stop"><input name="x" value="1"><button>stop</button></form>
<form id="logout" method="post" action="%[1]s/logout"><button>out</button></form>`, h.URL, id)
	}))
	t.Cleanup(evil.Close)
	if !strings.HasPrefix(evil.URL, "http://127.0.0.1:") {
		t.Fatalf("the other origin %s is not on 127.0.0.1: the cookie would not be sent", evil.URL)
	}
	tb := newTab(t, 0)
	tb.signIn(h, h.Token)
	for _, form := range []string{"stop", "logout"} {
		tb.do(
			chromedp.Navigate(evil.URL),
			waitVisible(chromedp.CSS("#"+form)),
			chromedp.Submit(chromedp.CSS("#"+form+" button")),
			waitVisible(chromedp.CSS(`body`)),
		)
		tb.waitTrue(form+": the hub's refusal is shown", `document.body.innerText.includes("cross_origin")`)
		if body := js[string](tb, `document.body.innerText`); !strings.Contains(body, "cross-origin request refused") {
			t.Errorf("%s: the refusal %q does not say why", form, body)
		}
	}
	code, out := h.api(t, http.MethodGet, "/v1/processes", "")
	var list cks.ProcessList
	if err := json.Unmarshal([]byte(out), &list); code != http.StatusOK || err != nil {
		t.Fatalf("list processes: %d %s %v", code, out, err)
	}
	for _, p := range list.Processes {
		if p.InstanceID == id && p.DesiredState == cks.DesiredStopRequested {
			t.Errorf("the cross-origin form asked agent %s to stop", id)
		}
	}
	// Still signed in: the cross-origin /logout ended nothing.
	tb.do(chromedp.Navigate(h.URL+"/"), waitVisible(chromedp.ID("processes-heading")))
}

// TestBrowserLayout walks every studio page (issue 24, item 8) at a 390 px
// phone and a 1920 px screen, with the content that once stretched pages
// (issue 39: a 1,000-byte title, a 20 KB payload, an answer with citations,
// a claim of long unbroken text held by a worker of a long name, a merged
// fork): none scrolls sideways (nor, at 390 px, does any table in it), each
// has a title naming it and the favicon, every input, select and textarea
// has a label, no control is a click-only element (every [onclick] or
// role=button is a real <button>, <a> or <input>), the sign-out button is
// in view, the first Tab press reaches "Skip to content", and at 390 px
// the header does not overflow and every nav link is in view and is what
// a tap at its centre hits. The error page says what
// to do; and the keyboard alone reaches Sign out and signs out. Then the
// login page, signed out. On both backends.
func TestBrowserLayout(t *testing.T) {
	t.Parallel()
	browserBackends(t, testLayout)
}

func testLayout(t *testing.T, backendName string) {
	h := startHub(t, backendName, nil)
	if code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"review","title":"A task with a rather long title that must wrap on a phone screen"}`); code != http.StatusCreated {
		t.Fatalf("create_task: %d %s", code, out)
	}
	h.submitQuestion(t, "How does cks stop a running task?")
	seed := seedLayout(t, h)
	seedFlow(t, h)
	// Every page of the studio's routes (studio.go), signed in.
	pages := []struct{ path, title string }{
		{"/", "Agent Panel"}, {"/processes/history?kind=critic", "critic history"}, {"/tasks", "Tasks"},
		{"/tasks/new", "New task"}, {"/tasks/1", "Task 1"}, {"/charts", "Charts"}, {"/objects", "Knowledge"},
		{"/objects/1", "Question 1"}, {"/objects/1/forks", "Forks of question 1"}, {"/research", "Research"},
		{"/access", "Access"}, {"/flow", "Flow control"}, {"/spend", "Spend"}, {"/objects/999999", "No such object"}, {"/no/such/page", "Not found"},
		{fmt.Sprintf("/tasks/%d", seed.LongTask), fmt.Sprintf("Task %d", seed.LongTask)},
		{fmt.Sprintf("/objects/%d", seed.Question), fmt.Sprintf("Question %d", seed.Question)},
		{fmt.Sprintf("/research?id=%d", seed.Question), "Research"},
		{fmt.Sprintf("/objects/%d", seed.Claim), fmt.Sprintf("Claim %d", seed.Claim)},
		{fmt.Sprintf("/objects/%d/forks", seed.Forked), fmt.Sprintf("Forks of claim %d", seed.Forked)},
	}
	for _, width := range []int{390, 1920} {
		tb := newTab(t, width)
		tb.signIn(h, h.Token)
		for _, p := range pages {
			tb.do(chromedp.Navigate(h.URL+p.path), waitVisible(chromedp.CSS("main h1")))
			where := fmt.Sprintf("%s at %d px", p.path, width)
			if got := value(tb, chromedp.Title()); got != p.title+" · cks studio" {
				t.Errorf("%s: title %q", where, got)
			}
			checkPageBasics(t, tb, where)
			if tb.tabUntil(`el.matches('a.skip[href="#main"]')`, 1) != 1 {
				t.Errorf("%s: the first Tab press does not reach Skip to content", where)
			}
			if !js[bool](tb, `(() => { const r = document.querySelector('[data-signout]').getBoundingClientRect();
				return r.width > 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight; })()`) {
				t.Errorf("%s: the Sign out button is not in view", where)
			}
			if width != 390 {
				continue
			}
			if over := js[[]string](tb, `[...document.querySelectorAll('main .table-wrap, main table')]
				.filter(e => e.scrollWidth > e.clientWidth).map(e => e.className + ': ' + e.scrollWidth + ' > ' + e.clientWidth)`); len(over) > 0 {
				t.Errorf("%s: tables scroll sideways: %v", where, over)
			}
			if over := js[[]string](tb, `[...document.querySelectorAll('.topbar, .topbar .nav')]
				.filter(e => e.scrollWidth > e.clientWidth).map(e => e.className + ': ' + e.scrollWidth + ' > ' + e.clientWidth)`); len(over) > 0 {
				t.Errorf("%s: the header scrolls sideways: %v", where, over)
			}
			hidden := js[[]string](tb, `[...document.querySelectorAll('.topbar .nav a')].filter(a => {
				const r = a.getBoundingClientRect();
				if (r.width === 0 || r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight) return true;
				const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
				return !(hit && a.contains(hit));
			}).map(a => a.textContent)`)
			if n := js[int](tb, `document.querySelectorAll('.topbar .nav a').length`); n < 5 || len(hidden) > 0 {
				t.Errorf("%s: %d nav links, these not in view or not what a tap hits: %v", where, n, hidden)
			}
		}
		if width == 390 {
			// A tap on the last nav link (the one a scrolled strip hid) goes there.
			tb.do(chromedp.Navigate(h.URL+"/"), waitVisible(chromedp.ID("processes-heading")))
			last := js[string](tb, `document.querySelector('.topbar .nav a:last-child').getAttribute('href')`)
			tb.do(click(chromedp.CSS(".topbar .nav a:last-child")))
			tb.waitTrue("the last nav link's page "+last, fmt.Sprintf(`location.pathname === %q && !!document.querySelector('main h1')`, last))
		}
		tb.do(chromedp.Navigate(h.URL + "/objects/999999"))
		msg := tb.text(`main .notice--error`)
		if !strings.Contains(msg, "no object 999999") || !strings.Contains(msg, "Find the object in the list") {
			t.Errorf("the error page %q does not say what to do", msg)
		}
		tb.do(chromedp.Navigate(h.URL + "/no/such/page"))
		if msg := tb.text(`main .notice`); !strings.Contains(msg, "Check it for a typing error") {
			t.Errorf("the not-found page %q does not say what to do", msg)
		}
		if width == 390 {
			// From the top of the page, Tab until Sign out has the focus, then Enter.
			tb.do(chromedp.Navigate(h.URL+"/research"), waitVisible(chromedp.ID("r-question")))
			reached := false
			for range 20 {
				tb.do(chromedp.KeyEvent("\t"))
				if js[bool](tb, `document.activeElement && document.activeElement.matches('[data-signout]')`) {
					reached = true
					break
				}
			}
			if !reached {
				t.Fatal("20 presses of Tab never reached the Sign out button")
			}
			tb.do(chromedp.KeyEvent("\r"), waitVisible(chromedp.ID("token")))
			// Signed out: the login page, at 390 px.
			if got := value(tb, chromedp.Title()); got != "Sign in · cks studio" {
				t.Errorf("login: title %q", got)
			}
			checkPageBasics(t, tb, "/login at 390 px")
		}
	}
}

// checkPageBasics fails t unless the tab's page has the favicon, does not
// scroll sideways, labels every input, select and textarea, and makes
// every clickable thing a native control.
func checkPageBasics(t *testing.T, tb *tab, where string) {
	t.Helper()
	if !js[bool](tb, `!!document.querySelector('link[rel=icon][href*="favicon.svg"]')`) {
		t.Errorf("%s: no favicon link", where)
	}
	if over := js[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("%s: the page is %d px wider than the window", where, over)
	}
	unlabelled := js[[]string](tb, `[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
		.map(e => e.name || e.id || e.outerHTML)`)
	if len(unlabelled) > 0 {
		t.Errorf("%s: inputs without a label: %v", where, unlabelled)
	}
	clickOnly := js[[]string](tb, `[...document.querySelectorAll('[onclick], [role=button], [tabindex]:not([tabindex="-1"])')]
		.filter(e => !e.matches('button, a[href], input, select, textarea, summary')).map(e => e.outerHTML.slice(0, 80))`)
	if len(clickOnly) > 0 {
		t.Errorf("%s: click-only elements that are no control: %v", where, clickOnly)
	}
}

package studio_test

// Browser tests of how the studio reads with long content (issue 39 item 6):
// board rows at a phone's width, long titles, long payloads.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
)

// inZone makes the tab's pages run in the time zone zone (an IANA name),
// as a browser on a machine set to it would.
func (tb *tab) inZone(zone string) {
	tb.t.Helper()
	emulate(tb, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
}

// TestBrowserLongContent: at a 390 px phone the board shows every row's
// title within the screen (the rows stack as cards); a 1,000-byte title
// takes at most three lines of its row, its whole text on hover (the title
// attribute) and on the task's page; and the task page with a 20 KB
// payload and a long description stays under 3,000 px at 1,280 px wide:
// each long field keeps to a box of its own that scrolls, its size in its
// heading. On both backends.
func TestBrowserLongContent(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		seed := seedLayout(t, h)
		row := fmt.Sprintf(`tr[data-key="task-%d"]`, seed.LongTask)
		for _, width := range []int{390, 1280} {
			tb := newTab(t, width)
			tb.signIn(h, h.Token)
			tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.CSS(row)))
			where := fmt.Sprintf("the board at %d px", width)
			if out := js[[]string](tb, `[...document.querySelectorAll('#board td.title')].filter(td => {
				const r = td.getBoundingClientRect();
				return !(r.width > 0 && r.left >= 0 && r.right <= window.innerWidth);
			}).map(td => td.closest('tr').dataset.key)`); len(out) > 0 {
				t.Errorf("%s: the titles of %v are not within the screen", where, out)
			}
			full := js[string](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.getAttribute('title') : ''; })()`, row+` td.title [title]`))
			if len(full) != 1000 {
				t.Errorf("%s: the long title's hover text is %d bytes, want the whole 1000", where, len(full))
			}
			lines := js[float64](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%q);
				return e ? e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight) : 99; })()`, row+` td.title [title]`))
			if lines > 3.2 {
				t.Errorf("%s: the long title takes %.1f lines of its row, want at most 3", where, lines)
			}
			tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, seed.LongTask)), waitVisible(chromedp.ID("payload-heading")))
			if h1 := tb.text("main h1"); !strings.Contains(h1, full) {
				t.Errorf("at %d px the task page's heading does not hold the whole title", width)
			}
			if width != 1280 {
				continue
			}
			if height := js[int](tb, `document.documentElement.scrollHeight`); height >= 3000 {
				t.Errorf("the task page with a 20 KB payload is %d px high at 1280 px, want under 3000", height)
			}
			if !js[bool](tb, `(() => { const p = document.querySelector('#payload-heading + pre'); return p.scrollHeight > p.clientHeight; })()`) {
				t.Error("the payload's box does not scroll on its own")
			}
			if got := js[string](tb, `((document.querySelector('#payload-heading .count') || {}).textContent || '')`); got != "21.7 KB" {
				t.Errorf("the payload's heading says %q, want its size 21.7 KB", got)
			}
		}
	})
}

// TestBrowserTimesInBrowserZone: in a browser set to Asia/Tokyo (UTC+9, no
// daylight saving), a task page shows its absolute times in Tokyo time, the
// UTC time on hover; a time a live update brings (the stop's event) reads
// in Tokyo time too; a relative age keeps its text and names the time in
// both zones on hover. On both backends.
func TestBrowserTimesInBrowserZone(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"review","title":"What time is it?"}`)
		var created struct {
			Task cks.Task `json:"task"`
		}
		if err := json.Unmarshal([]byte(out), &created); code != http.StatusCreated || err != nil {
			t.Fatalf("create_task: %d %s %v", code, out, err)
		}
		at := created.Task.CreatedAt.UTC().Truncate(time.Second)
		tokyo := at.In(time.FixedZone("JST", 9*3600)).Format("2006-01-02 15:04:05") + " GMT+9"
		utc := at.Format("2006-01-02 15:04:05 UTC")
		tb := newTab(t, 0)
		tb.inZone("Asia/Tokyo")
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", h.URL, created.Task.ID)), waitVisible(chromedp.ID("fields-heading")))
		tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
		sel := fmt.Sprintf(`#task-live dd > time[data-absolute][datetime=%q]`, at.Format(time.RFC3339))
		if got := tb.text(sel); got != tokyo {
			t.Errorf("the created time reads %q, want %q (Tokyo)", got, tokyo)
		}
		if got := js[string](tb, fmt.Sprintf(`document.querySelector(%q).title`, sel)); got != utc {
			t.Errorf("the created time's hover text is %q, want %q", got, utc)
		}
		// A live update: the stop's event row comes in, its time in Tokyo's.
		if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", created.Task.ID), `{"reason":"time check","wait":false}`); code != http.StatusOK {
			t.Fatalf("stop_task: %d %s", code, out)
		}
		tb.waitTrue("the stop's event row", `document.querySelectorAll('#task-live table.events tbody tr').length === 2`)
		if bad := js[[]string](tb, `[...document.querySelectorAll('time[data-absolute]')].filter(e => !e.textContent.endsWith(' GMT+9') || !e.title.endsWith(' UTC')).map(e => e.outerHTML)`); len(bad) > 0 {
			t.Errorf("times not in Tokyo's zone after the update: %v", bad)
		}
		tb.do(chromedp.Navigate(h.URL+"/tasks"), waitVisible(chromedp.CSS(`td[data-label="Age"] time`)))
		if got := js[string](tb, `document.querySelector('td[data-label="Age"] time').title`); got != tokyo+" ("+utc+")" {
			t.Errorf("the age's hover text is %q, want %q", got, tokyo+" ("+utc+")")
		}
	})
}

// signInTimes opens n studio sessions of h's admin, as n browsers signing
// in would (POST /login with the token).
func (h consoleHub) signInTimes(t testing.TB, n int) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range n {
		req, err := http.NewRequest(http.MethodPost, h.URL+"/login", strings.NewReader(url.Values{"token": {h.Token}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", h.URL) // the hub's own login form
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) == 0 {
			t.Fatalf("POST /login: %d, cookies %v", res.StatusCode, res.Cookies())
		}
	}
}

// inViewJS reports whether the element sel names is shown and wholly
// within the window, to the pixel: an element scrolled into view at the
// window's edge may stand a fraction of a pixel past it (a bottom of
// 900.25 in a window 900 high), which the layout's rounding decides.
func inViewJS(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || !e.checkVisibility()) return false;
		const r = e.getBoundingClientRect(); return r.top >= -1 && r.bottom <= window.innerHeight + 1 && r.height > 0; })()`, sel)
}

// TestBrowserAccessOnAPhone: on a 390 px phone, with as many other studio
// sessions of the same admin open as a principal may keep
// (auth.MaxSessionsPerPrincipal, with the viewer's own), the access page lists the viewer's own
// session first, marked "this session" (the only one so marked), each
// with when it signed in and when it expires; an error of its forms — a
// token with a bad grant, the revoke of the last admin — is brought into
// view, in an alert, though the control that failed sat at the bottom
// edge of the screen. On both backends.
func TestBrowserAccessOnAPhone(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		h.signInTimes(t, auth.MaxSessionsPerPrincipal-1)
		tb := newTab(t, 390)
		tb.signIn(h, h.Token)
		var list cks.SessionList
		code, out := h.api(t, http.MethodGet, "/v1/sessions", "")
		if err := json.Unmarshal([]byte(out), &list); code != http.StatusOK || err != nil || len(list.Sessions) != auth.MaxSessionsPerPrincipal {
			t.Fatalf("list_sessions: %d %v (%d sessions, want %d)", code, err, len(list.Sessions), auth.MaxSessionsPerPrincipal)
		}
		mine := slices.MaxFunc(list.Sessions, func(a, b cks.Session) int { return a.CreatedAt.Compare(b.CreatedAt) }).ID // the newest
		tb.do(chromedp.Navigate(h.URL+"/access"), waitVisible(chromedp.ID("sessions-heading")))
		if got := js[string](tb, `document.querySelector('#sessions tbody tr').dataset.session`); got != mine {
			t.Errorf("the first session listed is %s, want the viewer's own %s", got, mine)
		}
		if n := js[int](tb, `document.querySelectorAll('#sessions tr[data-current]').length`); n != 1 {
			t.Errorf("%d sessions marked as the viewer's, want 1", n)
		}
		if got := tb.text(`#sessions tbody tr:first-child`); !strings.Contains(got, "this session") {
			t.Errorf("the viewer's session reads %q: want it marked this session", got)
		}
		if n := js[int](tb, `document.querySelectorAll('#sessions tbody tr:first-child :is(td[data-label="Signed in"], td[data-label="Expires"]) time[datetime]').length`); n != 2 {
			t.Errorf("the viewer's session shows %d of when it signed in and when it expires, want both", n)
		}
		js[bool](tb, `window.cksNoConfirm = true`) // the test clicks for the operator
		// Each control at the bottom edge of the screen when clicked, as a
		// thumb would find it.
		atBottom := func(sel string) string {
			return fmt.Sprintf(`(() => { const b = document.querySelector(%q); b.scrollIntoView({block: "end"}); b.click(); return true; })()`, sel)
		}
		tb.do(
			chromedp.SetValue(chromedp.ID("grant-perm-0"), "stop"),
			chromedp.SendKeys(chromedp.ID("grant-res-0"), "tasks"),
		)
		js[bool](tb, atBottom(`[data-access-create-button]`))
		msg := `form[data-access-create] [data-action-error]`
		tb.waitTrue("the refused grant's message", fmt.Sprintf(`!!document.querySelector(%q).textContent`, msg))
		if !js[bool](tb, inViewJS(msg)) {
			t.Error("the refused grant's message is out of view")
		}
		js[bool](tb, atBottom(`#principals button[data-access-revoke]`)) // the last admin: refused
		msg = `#principals [data-access-error]`
		tb.waitTrue("the refused revoke's message", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q).textContent`, msg, msg))
		if got := tb.text(msg); !strings.Contains(got, "admin") {
			t.Errorf("the refused revoke says %q", got)
		}
		if !js[bool](tb, inViewJS(msg)) {
			t.Error("the refused revoke's message is out of view")
		}
		if role := js[string](tb, fmt.Sprintf(`document.querySelector(%q).getAttribute('role')`, msg)); role != "alert" {
			t.Errorf("the refused revoke's message has role %q, want alert (read out)", role)
		}
	})
}

// tabUntil presses Tab (a real key event) until the JavaScript condition
// cond holds of document.activeElement (as el), at most limit times, and
// returns how many presses it took (limit+1: never).
func (tb *tab) tabUntil(cond string, limit int) int {
	tb.t.Helper()
	for n := 1; n <= limit; n++ {
		tb.do(chromedp.KeyEvent("\t"))
		if js[bool](tb, `(() => { const el = document.activeElement; return !!el && (`+cond+`); })()`) {
			return n
		}
	}
	return limit + 1
}

// TestBrowserSkipToTasks: on the board (all of it, and a filtered list
// with its bulk form), the first Tab press reaches "Skip to content" and
// the second "Skip to the task list"; from there Enter and at most 5 Tab
// presses reach the first task's link. On both backends.
func TestBrowserSkipToTasks(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		for i := range 3 {
			h.createTask(t, cks.NewTask{Type: "review", Title: fmt.Sprintf("task %d", i)})
		}
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		firstTask := `el.matches('#board td[data-task-row] a') && el.closest('tr') === document.querySelector('#board tbody tr')`
		for _, path := range []string{"/tasks", "/tasks?state=OPEN"} {
			tb.do(chromedp.Navigate(h.URL+path), waitVisible(chromedp.CSS(`#board td[data-task-row] a`)))
			t.Logf("%s: %d Tab presses from the top of the page to the first task without the skip links", path,
				tb.tabUntil(firstTask, 100))
			tb.do(chromedp.Navigate(h.URL+path), waitVisible(chromedp.CSS(`#board td[data-task-row] a`)))
			if n := tb.tabUntil(`el.matches('a.skip[href="#main"]')`, 1); n != 1 {
				t.Errorf("%s: the first Tab press does not reach Skip to content", path)
			}
			if n := tb.tabUntil(`el.matches('a.skip[href="#task-lists"]')`, 1); n != 1 {
				t.Fatalf("%s: the second Tab press does not reach the skip link to the task list", path)
			}
			tb.do(chromedp.KeyEvent("\r"))
			n := tb.tabUntil(firstTask, 5)
			if n > 5 {
				t.Errorf("%s: 5 Tab presses from the skip link did not reach the first task", path)
			}
			t.Logf("%s: %d Tab presses from the skip link to the first task", path, n)
		}
	})
}

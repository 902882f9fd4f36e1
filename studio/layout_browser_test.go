package studio_test

// Browser tests of how the studio reads with long content (issue 39 item 6):
// board rows at a phone's width, long titles, long payloads.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
)

// inZone makes the tab's pages run in the time zone zone (an IANA name),
// as a browser on a machine set to it would.
func (tb *tab) inZone(zone string) {
	tb.t.Helper()
	tb.do(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return chromedp.Void{}, err
	})
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

package studio_test

// The studio's colours against WCAG 2's contrast minimum (issue 39 item 6).

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// colorScheme makes the tab's pages match prefers-color-scheme: scheme
// ("light" or "dark"), as a browser set so would.
func (tb *tab) colorScheme(scheme string) {
	tb.t.Helper()
	emulate(tb, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
}

// lowContrastJS lists the buttons, state badges, chips and links of the
// page whose text falls under WCAG 2's 4.5:1 against what is behind it:
// the text's colour and the background are each composited through every
// ancestor's background and opacity (a group's opacity blends what it
// draws over what is behind it), from a white canvas. A disabled control
// is exempt (WCAG 1.4.3), as is one not shown.
const lowContrastJS = `(() => {
	const parse = (c) => {
		const m = /rgba?\(([^)]*)\)/.exec(c);
		if (!m) return [0, 0, 0, 0];
		const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
		return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
	};
	const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
	const mix = (from, to, o) => [0, 1, 2].map((i) => from[i] + (to[i] - from[i]) * o).concat(1);
	// render is what chain[i..] draws over backdrop: its last element's
	// text (leaf) or, without a leaf, its background.
	const render = (chain, i, backdrop, leaf) => {
		const cs = getComputedStyle(chain[i]);
		const inside = over(parse(cs.backgroundColor), backdrop);
		const drawn = i === chain.length - 1 ? (leaf ? over(leaf, inside) : inside) : render(chain, i + 1, inside, leaf);
		return mix(backdrop, drawn, parseFloat(cs.opacity));
	};
	const lum = (c) => {
		const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
	};
	const out = [];
	for (const el of document.querySelectorAll('button, .button, .state, .badge, .status, .chip, a[href]')) {
		if (el.disabled || !el.checkVisibility() || !el.innerText.trim() || el.getBoundingClientRect().width === 0) continue;
		const chain = [];
		for (let e = el; e; e = e.parentElement) chain.unshift(e);
		const white = [255, 255, 255, 1];
		const fg = lum(render(chain, 0, white, parse(getComputedStyle(el).color)));
		const bg = lum(render(chain, 0, white, null));
		const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
		out.push({what: el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ' "' + el.innerText.trim().replace(/\s+/g, ' ').slice(0, 30) + '"', ratio: ratio});
	}
	return out;
})()`

// contrast is one element's contrast ratio, as lowContrastJS measures it.
type contrast struct {
	What  string  `json:"what"`
	Ratio float64 `json:"ratio"`
}

// taskIn makes a task in state to through real operations
// (backendtest.Into), of a type of its own, "contrast-" and the state.
func taskIn(t testing.TB, b *backend.Backend, to cks.TaskState) {
	t.Helper()
	backendtest.Into(t, b, to, "contrast-"+strings.ToLower(string(to)))
}

// TestBrowserContrast: every button, state badge, status, chip and link of
// the Agent Panel (an alive and a stopped agent, a stopped sweeper), the
// board (a task in each of the twelve states, an abort pending), task
// pages (one its budget stopped), the Flow control page (a paused type, a
// running and a paused schedule) and the Spend page has text at least 4.5:1 against its background (WCAG 2 AA), in
// the light scheme and in the dark one. On both backends.
func TestBrowserContrast(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		b := h.open(t)
		for _, st := range ledger.All {
			taskIn(t, b, st)
		}
		enqueue(t, b, "aborted", "a task whose abort is pending")
		claimed, err := b.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "worker-1", Types: []string{"aborted"}, N: 1, Lease: time.Hour})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		if code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/stop", claimed[0].ID), `{"reason":"abort pending","wait":false}`); code != http.StatusOK {
			t.Fatalf("stop_task: %d %s", code, out)
		}
		startAgent(t, h, "critic")
		stopped, exited := startAgent(t, h, "enrichment")
		if code, out := h.api(t, http.MethodPost, "/v1/processes/"+stopped+"/stop", `{}`); code != http.StatusOK {
			t.Fatalf("request_process_stop: %d %s", code, out)
		}
		select {
		case <-exited:
		case <-time.After(browserWait):
			t.Fatalf("the enrichment agent did not exit within %s of its stop", browserWait)
		}
		if code, out := h.api(t, http.MethodPost, "/v1/sweepers/lease_reaper/stop", ""); code != http.StatusOK {
			t.Fatalf("stop the lease reaper: %d %s", code, out)
		}
		seedFlow(t, h)
		// A task its budget stopped: its report reached max_tokens.
		if code, out := h.api(t, http.MethodPost, "/v1/tasks", `{"type":"budgeted","title":"Over budget","max_tokens":100,"max_cost":"1"}`); code != http.StatusCreated {
			t.Fatalf("create_task: %d %s", code, out)
		}
		overBudget := h.claimOne(t, "budgeted")
		h.reportUsage(t, overBudget, `{"model":"gpt-5","input_tokens":80,"output_tokens":40,"cost":"0.01"}`)
		var all []string
		for _, st := range ledger.All {
			all = append(all, "state="+string(st))
		}
		pages := []struct{ name, path, ready string }{
			{"the Agent Panel", "/", fmt.Sprintf(`[data-process-card=%q].card--stopped`, stopped)},
			{"the board", "/tasks", `#board table.tasks`},
			{"the board of every state", "/tasks?" + strings.Join(all, "&"), `#board table.tasks`},
			{"a stopped task's page", fmt.Sprintf("/tasks/%d", claimed[0].ID), `#task-actions`},
			{"an open task's page", "/tasks/1", `#task-actions`},
			{"the Flow control page", "/flow", `[data-schedule-card="weekly"].card--stopped`},
			{"a task its budget stopped", fmt.Sprintf("/tasks/%d", overBudget.ID), `[data-budget-stop]`},
			{"the Spend page", "/spend", `[data-spend-top]`},
		}
		for _, scheme := range []string{"light", "dark"} {
			tb := newTab(t, 0)
			tb.colorScheme(scheme)
			tb.signIn(h, h.Token)
			for _, p := range pages {
				tb.do(chromedp.Navigate(h.URL+p.path), waitVisible(chromedp.CSS(p.ready)))
				got := js[[]contrast](tb, lowContrastJS)
				if len(got) < 5 {
					t.Fatalf("%s, %s: only %d elements measured", p.name, scheme, len(got))
				}
				lowest := slices.MinFunc(got, func(a, b contrast) int { return cmp.Compare(a.Ratio, b.Ratio) })
				t.Logf("%s, %s scheme: %d elements, the lowest %s at %.2f:1", p.name, scheme, len(got), lowest.What, lowest.Ratio)
				low := slices.DeleteFunc(got, func(c contrast) bool { return c.Ratio >= 4.5 })
				for _, c := range low {
					t.Errorf("%s, %s scheme: %s has contrast %.2f:1, under 4.5:1", p.name, scheme, c.What, c.Ratio)
				}
			}
		}
	})
}

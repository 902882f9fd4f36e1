package studio_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// runExecAgent runs an exec agent claiming tasks of typ over a second
// handle on h's database, running command once per task, until t ends.
func runExecAgent(t testing.TB, h consoleHub, typ string, command ...string) {
	t.Helper()
	b, err := backend.Open(context.Background(), h.Database)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	resolve := agents.Exec(agents.ExecConfig{KillGrace: time.Second, Command: command})
	go func() {
		done <- agents.Run(ctx, agents.ServicesOf(b), agents.Settings{Kind: "exec", Types: []string{typ}, LivenessInterval: time.Second,
			PollInterval: 200 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, Lease: time.Minute, StaleWindow: time.Minute}, resolve,
			agents.Options{})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("exec agent: %v", err)
		}
		b.Close()
	})
}

// TestBrowserChartsAndPanelDetails: on both backends, at 390 px, an open
// Charts page draws tasks finished per minute once an exec agent completes
// some, without a reload, every chart an SVG with a <title> and a <desc>
// and nothing wider than the screen; at 1920 px the charts sit three a
// row. On the Agent Panel the lease_reaper's card lists a recent pass, and
// the card of an agent at work names the task types it claims and links
// the task it holds.
func TestBrowserChartsAndPanelDetails(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		tb := newTab(t, 390)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(h.URL+"/charts"), waitVisible(chromedp.CSS(`#chart-finished svg`)))
		if got := tb.text(`#chart-finished`); !strings.Contains(got, "no data in this window") {
			t.Errorf("the finished chart before any task: %q, want no data", got)
		}

		quick := "quick-" + backendName
		runExecAgent(t, h, quick, "sh", "-c", "cat > /dev/null; echo done")
		var last cks.Task
		for i := range 3 {
			last = h.createTask(t, cks.NewTask{Type: quick, Title: fmt.Sprintf("quick %d", i)})
		}
		h.waitTask(t, last.ID, "COMPLETED", func(t cks.Task) bool { return t.State == cks.TaskCompleted })
		// The page follows the completions (a refresh every 2 s at most): all three, without a reload.
		if err := tb.poll(`document.querySelectorAll("#chart-finished svg rect.chart__s0").length > 0 &&
			document.querySelector("#chart-finished svg desc").textContent.includes("completed: 3 tasks / min in all")`); err != nil {
			t.Fatalf("the open page does not draw the 3 completed tasks: %v; its desc reads %q", err,
				js[string](tb, `document.querySelector("#chart-finished svg desc").textContent`))
		}
		tb.waitTrue("the latency chart has points", `document.querySelectorAll("#chart-latency svg circle").length > 0`)
		if !js[bool](tb, `[...document.querySelectorAll("svg.chart")].length === 4 && [...document.querySelectorAll("svg.chart")].every(s =>
			s.querySelector(":scope > title").textContent.trim() !== "" && s.querySelector(":scope > desc").textContent.trim() !== "" &&
			s.getAttribute("role") === "img")`) {
			t.Errorf("not 4 charts each with a title, a desc and role img: %s", js[string](tb, `document.querySelector(".charts").outerHTML.slice(0, 2000)`))
		}
		if w := js[int](tb, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the charts page is %d px wide at 390", w)
		}

		wide := newTab(t, 1920)
		wide.signIn(h, h.Token)
		wide.do(chromedp.Navigate(h.URL+"/charts"), waitVisible(chromedp.CSS(`#chart-sweepers svg`)))
		if n := js[int](wide, `getComputedStyle(document.querySelector(".charts")).gridTemplateColumns.split(" ").length`); n < 3 {
			t.Errorf("%d charts a row at 1920 px, want 3 or more", n)
		}

		// An agent at work: its card names its types and links its task.
		hold := "hold-" + backendName
		runExecAgent(t, h, hold, "sh", "-c", "cat > /dev/null; exec sleep 60")
		held := h.createTask(t, cks.NewTask{Type: hold, Title: "held"})
		h.waitTask(t, held.ID, "RUNNING", func(t cks.Task) bool { return t.State == cks.TaskRunning })
		tb.do(chromedp.Navigate(h.URL+"/"), waitVisible(chromedp.ID("processes-heading")))
		working := fmt.Sprintf(
			`[...document.querySelectorAll("[data-process-card]")].some(c => c.querySelector("[data-task-types]").textContent.includes(%q) && c.querySelector('a.task[href="/tasks/%d"]'))`,
			hold, held.ID)
		if err := tb.poll(working); err != nil {
			t.Fatalf("no card names %s and links task %d: %v; the cards read:\n%s", hold, held.ID, err,
				js[string](tb, `[...document.querySelectorAll("[data-process-card]")].map(c => c.innerText.replace(/\s+/g, " ")).join("\n")`))
		}
		// One evaluation reads the pass and its duration: the live panel may
		// swap the card in between two reads (a chromedp Text of the node a
		// WaitVisible found then reads a detached node: "").
		pass := `document.querySelector('[data-sweeper-card="lease_reaper"] [data-pass]')`
		if err := tb.poll(`(() => { const p = ` + pass + `; return p !== null && p.querySelector("time") !== null &&
			(p.innerText.includes("ms") || p.innerText.includes(" s")); })()`); err != nil {
			t.Errorf("lease_reaper's card lists no recent pass with its duration: %v; it reads %q", err,
				js[string](tb, `(`+pass+` || {innerText: ""}).innerText`))
		}
	})
}

// legendColoursJS maps each chart's id to the colours of its legend keys,
// as the browser draws them.
const legendColoursJS = `Object.fromEntries([...document.querySelectorAll('.chart-figure')].map(f =>
	[f.id, [...f.querySelectorAll('.chart-legend li .chart-legend__color')].map(e => getComputedStyle(e).stroke)]))`

// TestBrowserChartsWindowsAndColours: with tasks in nine unfinished states
// the queue-depth chart has nine series, and in every chart no two legend
// entries share a colour, in the light scheme and the dark; each line's
// key shows its dash. The window links switch the charts to the last 24
// hours (by 15 minutes) and 7 days (by 2 hours), named in the address,
// and the live part refreshes the window shown. On both backends.
func TestBrowserChartsWindowsAndColours(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		b := h.open(t)
		for _, st := range ledger.Unfinished {
			taskIn(t, b, st)
		}
		for _, scheme := range []string{"light", "dark"} {
			tb := newTab(t, 0)
			tb.colorScheme(scheme)
			tb.signIn(h, h.Token)
			tb.do(chromedp.Navigate(h.URL+"/charts"), waitVisible(chromedp.CSS(`#chart-depth svg`)))
			legends := js[map[string][]string](tb, legendColoursJS)
			if n := len(legends["chart-depth"]); n != len(ledger.Unfinished) {
				t.Errorf("%s: the queue-depth chart has %d legend entries, want %d: %v", scheme, n, len(ledger.Unfinished), legends)
			}
			for id, colours := range legends {
				seen := map[string]int{}
				for i, c := range colours {
					if j, ok := seen[c]; ok {
						t.Errorf("%s: %s's legend entries %d and %d share the colour %s", scheme, id, j, i, c)
					}
					seen[c] = i
				}
			}
			dashes := js[[]string](tb, `[...document.querySelectorAll('#chart-depth .chart-legend__color')].map(e => getComputedStyle(e).strokeDasharray)`)
			if len(dashes) < 2 || dashes[0] == dashes[1] {
				t.Errorf("%s: the first two depth lines' keys do not differ in dash: %v", scheme, dashes)
			}
			if scheme == "dark" {
				continue
			}
			for _, w := range []struct{ value, per string }{{"24h", "15 minutes"}, {"7d", "2 hours"}} {
				tb.do(click(chromedp.CSS(fmt.Sprintf(`a[data-window=%q]`, w.value))), waitVisible(chromedp.CSS(fmt.Sprintf(`.charts[data-window=%q]`, w.value))))
				if loc := value(tb, chromedp.Location()); !strings.HasSuffix(loc, "/charts?window="+w.value) {
					t.Errorf("the %s window's address is %s", w.value, loc)
				}
				if got := tb.text(`#chart-finished figcaption`); got != "Tasks finished per "+w.per {
					t.Errorf("the %s window's first chart is %q", w.value, got)
				}
				if got := tb.text(`nav[aria-label="Window"] [aria-current="page"]`); !strings.Contains(got, strings.TrimSuffix(strings.TrimSuffix(w.value, "h"), "d")) {
					t.Errorf("the %s window's link marked current reads %q", w.value, got)
				}
			}
			// The live part refreshes the 7-day window: every fetch of the
			// fragment (one as the event stream opens, more on events) names it.
			tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
			h.createTask(t, cks.NewTask{Type: "late", Title: "one more"})
			fetches := `performance.getEntriesByType("resource").map(e => e.name).filter(n => n.includes("/studio/charts"))`
			tb.waitTrue("a fetch of the charts' fragment", fetches+`.length > 0`)
			if bad := js[[]string](tb, fetches+`.filter(n => !n.endsWith("/studio/charts?window=7d"))`); len(bad) > 0 {
				t.Errorf("the 7-day page fetched other windows' charts: %v", bad)
			}
		}
	})
}

package studio_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/agents"
	"github.com/cks-dev/cks/backend"
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

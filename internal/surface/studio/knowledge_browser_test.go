package studio_test

// Browser tests of the knowledge inspector and the research page, on both
// backends.

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
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
)

// browserBackends runs f once per backend, as subtests (one after the
// other: the machine's two cores are shared).
func browserBackends(t *testing.T, f func(t *testing.T, backendName string)) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}

// submitQuestion asks q through the API (submit_research) and returns the
// question object's id.
func (h consoleHub) submitQuestion(t testing.TB, q string) int64 {
	t.Helper()
	body, _ := json.Marshal(cks.SubmitResearchInput{Question: q})
	code, out := h.api(t, http.MethodPost, "/v1/objects", string(body))
	var o cks.Object
	if err := json.Unmarshal([]byte(out), &o); code != http.StatusCreated || err != nil {
		t.Fatalf("submit_research: %d %s %v", code, out, err)
	}
	return o.ID
}

// TestBrowserForkDiff: an object forked through the API (two versions
// written from version 1) is flagged in the object list; its fork diff
// shows both heads beside their merge base, with the fields each changed.
func TestBrowserForkDiff(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		id := h.submitQuestion(t, "Which head wins?")
		for _, content := range []string{`{"question":"Which head wins?","note":"from the left"}`,
			`{"question":"Which head wins, really?"}`} {
			code, out := h.api(t, http.MethodPost, fmt.Sprintf("/v1/objects/%d/versions", id),
				`{"base_version":1,"content":`+content+`}`)
			if code != http.StatusCreated {
				t.Fatalf("write_object_version: %d %s", code, out)
			}
		}
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		forks := fmt.Sprintf(`a[href="/objects/%d/forks"]`, id)
		tb.do(
			click(chromedp.CSS(`nav a[href="/objects"]`)),
			waitVisible(chromedp.CSS(forks)),
			click(chromedp.CSS(forks)),
			waitVisible(chromedp.CSS(`table[data-diff]`)),
		)
		if got := value(tb, chromedp.Title()); got != fmt.Sprintf("Forks of question %d · cks studio", id) {
			t.Errorf("title %q", got)
		}
		heads := js[[]string](tb, `[...document.querySelectorAll('th[data-role="head"]')].map(th => th.dataset.column)`)
		if strings.Join(heads, ",") != "2,3" {
			t.Errorf("head columns %v, want versions 2 and 3", heads)
		}
		if base := js[string](tb, `document.querySelector('th[data-role="merge base"]').dataset.column`); base != "1" {
			t.Errorf("merge base column %q, want 1", base)
		}
		states := js[map[string][]string](tb, `Object.fromEntries([...document.querySelectorAll('tr[data-field]')].map(
			tr => [tr.dataset.field, [...tr.querySelectorAll('td')].map(td => td.dataset.state)]))`)
		want := map[string]string{"note": "absent added absent", "question": "base same changed"}
		for field, w := range want {
			if got := strings.Join(states[field], " "); got != w {
				t.Errorf("field %s: %s, want %s", field, got, w)
			}
		}
		if !strings.Contains(tb.text(`[data-fork-state="forked"]`), "2 heads") {
			t.Error("the diff does not say the object has 2 heads")
		}
	})
}

// startPipeline runs the research pipeline as `cks agent pipeline` would:
// in this process, over a second handle on h's database, with the offline
// model (the one fake the tests allow) and the shipped corpus; it stops
// when t ends.
func startPipeline(t testing.TB, h consoleHub) {
	t.Helper()
	b, err := backend.Open(context.Background(), h.Database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	set, err := config.ParsePipeline(nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := hub.NewPipeline(hub.PipelineConfig{Store: b.Objects, Changes: b.Changes, Settings: set, Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Stop(context.Background()); err != nil {
			t.Errorf("stop the pipeline: %v", err)
		}
	})
}

// TestBrowserResearch: a question asked on the research page from the
// keyboard waits at its first step while no pipeline runs; once a pipeline
// agent runs on the store, the page follows it through the four steps to
// the answer with numbered citations, without a reload.
func TestBrowserResearch(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		tb := newTab(t, 0)
		tb.signIn(h, h.Token)
		tb.do(
			click(chromedp.CSS(`nav a[href="/research"]`)),
			waitVisible(chromedp.ID("r-question")),
		)
		tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
		js[bool](tb, `window.cksNoReload = true`)
		tb.do(
			chromedp.SendKeys(chromedp.ID("r-question"), "How does cks stop a running task?"),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)), // Ctrl+Enter asks
			waitVisible(chromedp.CSS(`#research-progress [data-question]`)),
		)
		if got := tb.text(`#research-progress [data-object-status]`); got != cks.StatusAwaitingResearch {
			t.Fatalf("before any pipeline runs the question reads %q, want %s", got, cks.StatusAwaitingResearch)
		}
		if state := js[string](tb, `document.querySelector('[data-step="researcher"]').dataset.stepState`); state != "active" {
			t.Errorf("the Research step reads %q before the pipeline runs, want active", state)
		}
		loc := value(tb, chromedp.Location())
		if !strings.Contains(loc, "/research?id=") {
			t.Errorf("the page's address %s does not name the question", loc)
		}
		start := time.Now()
		startPipeline(t, h)
		tb.waitTrue("the question resolves on the page",
			`!!document.querySelector('#research-progress [data-terminal][data-status="resolved"]')`)
		t.Logf("%s: resolved on the page %v after the pipeline started", backendName, time.Since(start).Round(time.Millisecond))
		states := js[[]string](tb, `[...document.querySelectorAll('#research-progress [data-step]')].map(s => s.dataset.step + "=" + s.dataset.stepState)`)
		if got := strings.Join(states, " "); got != "researcher=done critic=done synthesizer=done arbiter=done" {
			t.Errorf("steps %s, want all four done", got)
		}
		answer := tb.text(`#research-progress [data-answer] .answer__text`)
		if !strings.Contains(answer, "[1]") || !strings.Contains(answer, "cks task stop") {
			t.Errorf("answer %q: want the answer with numbered citations", answer)
		}
		if n := js[int](tb, `document.querySelectorAll('#research-progress .citations li').length`); n < 1 {
			t.Error("no cited passages under the answer")
		}
		if !js[bool](tb, `window.cksNoReload === true`) {
			t.Error("the page reloaded; it should follow the question live")
		}
	})
}

package studio_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// processCard returns the HTML of instance id's process card in body.
func processCard(t *testing.T, body, id string) string {
	t.Helper()
	for _, part := range strings.Split(body, "<li ")[1:] {
		if strings.Contains(part, `data-process-card="`+id+`"`) {
			return part[:strings.Index(part, "</li>")]
		}
	}
	t.Fatalf("no card for process %s in\n%s", id, body)
	return ""
}

// TestProcessCardsOfferStop: an alive card has a Stop button addressed to its
// instance id; an alive card whose row asks it to stop says "stop requested"
// instead; a stopped card has neither; no card offers a start.
func TestProcessCardsOfferStop(t *testing.T) {
	e := newEnv(t)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("alive-instance-000000001", "critic", 0))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("asked-instance-000000002", "enrichment", 0))
	backendtest.MustUpsert(t, e.store, backendtest.Liveness("gone-instance-0000000003", "pipeline", -time.Hour))
	if ok, err := e.store.Liveness.RequestAgentStop(context.Background(), "asked-instance-000000002"); err != nil || !ok {
		t.Fatalf("RequestAgentStop: %v %v", ok, err)
	}
	e.clock.Advance(5 * time.Second)

	for _, target := range []string{"/", studio.FragmentPath} {
		r := get(t, e.h, target)
		wantHTML(t, r, http.StatusOK)
		alive := processCard(t, r.body, "alive-instance-000000001")
		mustContain(t, target+" alive card", alive, `data-process-stop="alive-instance-000000001"`, `>Stop</button>`, "data-action-error")
		mustNotContain(t, target+" alive card", alive, "stop requested", "card--draining")

		asked := processCard(t, r.body, "asked-instance-000000002")
		mustContain(t, target+" asked card", asked, "card--draining", `class="stop-requested"`, ">stop requested<",
			"it finishes its current task and exits")
		mustNotContain(t, target+" asked card", asked, "data-process-stop", "<button")

		gone := processCard(t, r.body, "gone-instance-0000000003")
		mustContain(t, target+" stopped card", gone, "card--stopped")
		mustNotContain(t, target+" stopped card", gone, "data-process-stop", "<button", "stop requested")

		processes := r.body[strings.Index(r.body, `data-process-card`):]
		if i := strings.Index(processes, `data-sweeper`); i >= 0 {
			processes = processes[:i]
		}
		mustNotContain(t, target+" process cards", processes, ">Start<", "data-process-start")
	}

	// A stopped instance whose row still says stop_requested (it exited on
	// request) is simply stopped.
	e.clock.Advance(time.Hour)
	r := get(t, e.h, studio.FragmentPath)
	asked := processCard(t, r.body, "asked-instance-000000002")
	mustContain(t, "exited card", asked, "card--stopped")
	mustNotContain(t, "exited card", asked, "stop requested", "<button")
}

// TestProcessStopScript: the panel's script posts the instance id to the
// HTTP API's process stop endpoint with the browser's cookie.
func TestProcessStopScript(t *testing.T) {
	e := newEnv(t)
	page := get(t, e.h, "/")
	var js string
	for _, m := range assetRef.FindAllStringSubmatch(page.body, -1) {
		if strings.Contains(m[1], ".js") {
			js = get(t, e.h, strings.ReplaceAll(m[1], "&amp;", "&")).body
		}
	}
	mustContain(t, "studio.js", js, "button[data-process-stop]", `"/v1/processes/" + encodeURIComponent(id) + "/stop"`,
		`method: "POST"`, `credentials: "same-origin"`, "body.found === false", "processes.refresh()")
}

// TestProcessStopFromBrowser: through the hub's handler, a browser signed in
// with the cookie stops a process by its instance id, and the card then
// reads "stop requested"; a signed-in reader without control is refused.
func TestProcessStopFromBrowser(t *testing.T) {
	e := newEnv(t)
	backendtest.MustUpsert(t, e.store, backendtest.Liveness(instanceID, "critic", 0))
	svc := liveness.NewService(e.store.Driver(), e.clock)
	services := &ops.Services{Liveness: svc, Principals: e.store.Principals, Clock: e.clock}
	a := api.New(api.Config{Services: services, Studio: studio.New(services, studio.Options{Version: "v-test"})})
	hs := httptest.NewServer(a)
	t.Cleanup(func() { a.CloseStreams(); hs.Close() })
	// sessionFor is the cookie of a browser signed in with a token of g.
	sessionFor := func(g cks.Grant) string {
		_, tok, err := auth.CreateToken(context.Background(), e.store.Principals, e.clock, "browser", []cks.Grant{g})
		if err != nil {
			t.Fatal(err)
		}
		secret, _, err := e.store.Principals.Login(context.Background(), tok, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	post := func(tok string) (int, string) {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/processes/"+instanceID+"/stop", nil)
		req.AddCookie(&http.Cookie{Name: api.CookieName, Value: tok})
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin") // as the studio's fetch sends it
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fragment := func(tok string) string {
		req, _ := http.NewRequest("GET", hs.URL+studio.FragmentPath, nil)
		req.AddCookie(&http.Cookie{Name: api.CookieName, Value: tok})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	reader := sessionFor(cks.Grant{Resource: "/", Permission: auth.PermRead})
	if status, body := post(reader); status != http.StatusForbidden || !strings.Contains(body, "needs control on /processes/critic") {
		t.Fatalf("stop with read only: %d %s, want 403 naming control on /processes/critic", status, body)
	}
	mustContain(t, "card before", processCard(t, fragment(reader), instanceID), "data-process-stop")

	operator := sessionFor(cks.Grant{Resource: "/", Permission: auth.PermAdmin})
	status, body := post(operator)
	if status != http.StatusOK || !strings.Contains(body, `"found":true`) || !strings.Contains(body, `"process_kind":"critic"`) {
		t.Fatalf("stop from the browser: %d %s", status, body)
	}
	card := processCard(t, fragment(operator), instanceID)
	mustContain(t, "card after", card, ">stop requested<")
	mustNotContain(t, "card after", card, "data-process-stop")
}

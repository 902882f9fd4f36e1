package api_test

// Fuzz targets for every request the HTTP API decodes: each sends the fuzzed
// body (or path segment, or query) through the real handler, as one of four
// principals, against a task in a state the target names, on a SQLite store
// opened once per target. The properties: no panic, no 5xx, every 4xx is a
// JSON {"error":{"code","message"}}, and an answer of 4xx changed nothing in
// the database (PRAGMA data_version, read on a connection of its own, moves
// with every commit of any other connection).
//
// A body may name the target's task through placeholders the harness
// replaces before sending: $ID (its id), $LEASE (the lease token of its
// current or revoked lease), $BASE (the head version of a fresh object, for
// version writes) and $WS (a workspace an earlier attempt recorded).
//
// Run one with: go test -run '^$' -fuzz '^FuzzStopTask$' -fuzztime 30s -parallel 1 ./internal/surface/api

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
)

// fuzzHub is an API on a SQLite store in a temporary directory, shared by all
// the inputs of one fuzz target.
type fuzzHub struct {
	api   *api.API
	store *backend.Backend
	// db is a read-only connection of its own to the database file, for
	// backendtest.Records.
	db *sql.Conn
	// tokens of the principals a request is sent as (see principal).
	admin, reader string
	// n numbers the task types of the setups, so each claims its own task.
	n int
}

func newFuzzHub(tb testing.TB) *fuzzHub {
	tb.Helper()
	ctx := context.Background()
	dir := datadir.Dir(tb.TempDir())
	path := filepath.Join(string(dir), "cks.db")
	c := clock.NewFake(backendtest.T0)
	s, err := backend.Open(ctx, path, driver.WithClock(c))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := auth.EnsureAdminToken(ctx, s.Principals, dir, c); err != nil {
		tb.Fatal(err)
	}
	admin, err := dir.ReadToken()
	if err != nil {
		tb.Fatal(err)
	}
	_, reader, err := auth.CreateToken(ctx, s.Principals, c, "reader", []cks.Grant{{Permission: auth.PermRead, Resource: auth.ResourceRoot}})
	if err != nil {
		tb.Fatal(err)
	}
	// The runtime's sweepers are registered, not started: nothing writes in
	// the background unless an input starts one (FuzzSweeperControl).
	rt, err := hub.NewRuntime(s, hub.RuntimeConfig{Clock: c})
	if err != nil {
		tb.Fatal(err)
	}
	// The sweepers' passes run on the maintenance leader: this fixture's
	// runtime, which is not started as a whole, takes part in the election.
	if err := rt.Leader.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	a := api.New(api.Config{Services: &ops.Services{Liveness: liveness.NewService(s.Driver(), c), Tasks: s.Tasks, Objects: s.Objects, Sweepers: rt.Sweepers, Clock: c, Principals: s.Principals}, Version: "fuzz"})
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		db.Close()
		rt.Stop(context.Background())
		a.CloseStreams()
		s.Close()
	})
	return &fuzzHub{api: a, store: s, db: conn, admin: admin, reader: reader}
}

// records is what a refused request must leave as it was
// (backendtest.Records: every table but those the process writes in the
// background).
func (h *fuzzHub) records(t testing.TB) map[string]string {
	t.Helper()
	return backendtest.Records(t, h.db)
}

// state is the state of the task a request is sent against.
type state int

const (
	open state = iota
	claimed
	running
	needsInput
	needsReview
	reviewing
	stopped
	// aborting is STOPPED from CLAIMED: its abort, pending, names $LEASE.
	aborting
	completed
	// rerun is RUNNING again after a stop and start; the attempt before
	// recorded the workspace $WS.
	rerun
)

var stateNames = [...]string{"OPEN", "CLAIMED", "RUNNING", "NEEDS_INPUT", "NEEDS_REVIEW", "REVIEWING", "STOPPED",
	"STOPPED with a pending abort", "COMPLETED", "RUNNING again"}

func (s state) String() string { return stateNames[s] }

// target is what a request is sent against: a task, and for version writes
// an object.
type target struct {
	id, object, base int64
	lease, ws        string
}

// task creates a task in state st, through the store.
func (h *fuzzHub) task(t testing.TB, st state) target {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("set up a %s task: %v", st, err)
		}
	}
	h.n++
	typ := fmt.Sprintf("fuzz-%d", h.n)
	tk, _, err := h.store.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, Title: "fuzz target"})
	must(err)
	tg := target{id: tk.ID}
	claim := func() {
		t.Helper()
		ts, err := h.store.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "fuzz-worker", Types: []string{typ}, N: 1, Lease: time.Hour})
		must(err)
		if len(ts) != 1 || ts[0].ID != tg.id {
			t.Fatalf("set up a %s task: claimed %d tasks of type %s, want task %d", st, len(ts), typ, tg.id)
		}
		tg.lease = ts[0].LeaseToken
	}
	run := func() {
		t.Helper()
		claim()
		_, err := h.store.Tasks.MarkRunning(ctx, tg.id, tg.lease)
		must(err)
	}
	switch st {
	case open:
	case stopped:
		_, err = h.store.Tasks.StopTask(ctx, ledger.StopParams{ID: tg.id, Actor: "fuzz", Reason: "held for the fuzz input", Deadline: cks.DefaultAbortDeadline})
		must(err)
	case claimed:
		claim()
	case aborting:
		claim()
		_, err = h.store.Tasks.StopTask(ctx, ledger.StopParams{ID: tg.id, Actor: "fuzz", Reason: "held for the fuzz input", Deadline: cks.DefaultAbortDeadline})
		must(err)
	case running:
		run()
	case needsInput:
		run()
		_, err = h.store.Tasks.RequestInput(ctx, tg.id, tg.lease, "which one?")
		must(err)
	case needsReview, reviewing, completed:
		run()
		_, err = h.store.Tasks.Complete(ctx, tg.id, tg.lease, st != completed, "done")
		must(err)
		if st == reviewing {
			rv, err := h.store.Tasks.ClaimReview(ctx, tg.id, "fuzz-reviewer", time.Hour)
			must(err)
			tg.lease = rv.LeaseToken
		}
	case rerun:
		run()
		tg.ws = fmt.Sprintf("/tmp/fuzz-workspace-%d", h.n)
		_, err = h.store.Tasks.AddEvidence(ctx, tg.id, tg.lease, cks.EvidenceWorkspace, tg.ws)
		must(err)
		_, err = h.store.Tasks.StopTask(ctx, ledger.StopParams{ID: tg.id, Actor: "fuzz", Reason: "rerun", Deadline: cks.DefaultAbortDeadline})
		must(err)
		_, err = h.store.Tasks.ConfirmAbort(ctx, tg.id, tg.lease)
		must(err)
		_, err = h.store.Tasks.Start(ctx, tg.id, "fuzz", "rerun")
		must(err)
		run()
	default:
		t.Fatalf("unknown state %d", st)
	}
	return tg
}

// object creates a question object and puts its id and head version in tg.
func (h *fuzzHub) object(t testing.TB, tg *target) {
	t.Helper()
	o, err := pipeline.Submit(context.Background(), h.store.Objects, pipeline.Question{Question: "Which version wins?"}, "fuzz")
	if err != nil {
		t.Fatal(err)
	}
	tg.object, tg.base = o.ID, o.HeadVersion
}

// principal returns the token a request is sent with: who%4 picks the admin,
// a reader (read on /), a task-scoped agent credential for the target task,
// or no token at all.
func (h *fuzzHub) principal(t testing.TB, who byte, tg target) (name, token string) {
	t.Helper()
	switch who % 4 {
	case 0:
		return "admin", h.admin
	case 1:
		return "reader", h.reader
	case 2:
		// The grants of a claim's credential, unbound (as `cks token create
		// --task` makes them): the target need not be leased.
		_, tok, err := auth.CreateToken(context.Background(), h.store.Principals, nil, "fuzz-agent", auth.TaskTokenGrants(tg.id))
		if err != nil {
			t.Fatal(err)
		}
		return "task-scoped", tok
	}
	return "anonymous", ""
}

// expand replaces the placeholders of body.
func expand(body []byte, tg target) []byte {
	r := strings.NewReplacer("$ID", strconv.FormatInt(tg.id, 10), "$LEASE", tg.lease,
		"$BASE", strconv.FormatInt(tg.base, 10), "$WS", tg.ws)
	return []byte(r.Replace(string(body)))
}

// fuzzRequest is one request of a fuzz input.
type fuzzRequest struct {
	method, path string
	// rawQuery, when set, is the query as sent (it need not parse).
	rawQuery string
	body     []byte
	token    string
	form     bool // body is a form (POST /login)
}

// serve sends req through the handler and returns the status and body.
func (h *fuzzHub) serve(t testing.TB, req fuzzRequest) (int, http.Header, []byte) {
	t.Helper()
	// A stop that waits is ended by the confirmer long before this; the
	// timeout only keeps a broken harness from hanging the fuzzer.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, req.method, "http://hub.test/", bytes.NewReader(req.body))
	r.URL.Path, r.URL.RawQuery = req.path, req.rawQuery
	r.RequestURI = r.URL.RequestURI()
	if req.form {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r.Header.Set("Content-Type", "application/json")
	}
	if req.token != "" {
		r.Header.Set("Authorization", "Bearer "+req.token)
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, r)
	return w.Code, w.Header(), w.Body.Bytes()
}

// checkAnswer asserts the properties every answer has: no 5xx; a 4xx is a
// JSON error with a code and a message; a 2xx with a body has JSON in it.
func checkAnswer(t testing.TB, what string, status int, hdr http.Header, body []byte) {
	t.Helper()
	switch {
	case status >= 500:
		t.Fatalf("%s: status %d, want no 5xx for any input: %s", what, status, body)
	case status >= 400:
		if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: %d with Content-Type %q, want application/json: %s", what, status, ct, body)
		}
		var e api.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("%s: %d body is not {\"error\":{\"code\",\"message\"}} (%v): %s", what, status, err, body)
		}
	case status >= 200 && status < 300 && len(bytes.TrimSpace(body)) > 0:
		if !json.Valid(body) {
			t.Fatalf("%s: %d body is not JSON: %s", what, status, body)
		}
	}
}

// send serves req and checks the answer, and that a 4xx changed nothing.
func (h *fuzzHub) send(t testing.TB, what string, req fuzzRequest) (int, []byte) {
	t.Helper()
	before := h.records(t)
	status, hdr, body := h.serve(t, req)
	checkAnswer(t, what, status, hdr, body)
	// No input grows an answer far past its own size (issue 22: 18 KB of
	// nesting answered 162 MB): the fuzz hub's tasks are small, so an
	// answer is at most about the request and a task's worth more.
	if limit := 2*len(req.body) + 32<<10; len(body) > limit {
		t.Fatalf("%.300s: a %d-byte request answered %d bytes, past %d", what, len(req.body), len(body), limit)
	}
	if status >= 400 {
		backendtest.DiffState(t, fmt.Sprintf("%.300s, answered %d (%.200s),", what, status, body), before, h.records(t))
		if t.Failed() {
			t.FailNow()
		}
	}
	return status, body
}

// confirmer confirms the abort of tg's lease as soon as one is requested,
// as a live executor would, so a stop or update that waits for it returns
// at once. The returned func ends it.
func (h *fuzzHub) confirmer(tg target) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.store.Changes.WatchChanges(ctx, []string{cks.TopicTaskAborts}, func(string) { //nolint:errcheck // ends with ctx
			if _, err := h.store.Tasks.ConfirmAbort(ctx, tg.id, tg.lease); err == nil {
				cancel()
			}
		})
	}()
	return func() { cancel(); <-done }
}

// bodyTarget is a fuzz target for one request body.
type bodyTarget struct {
	method string
	// path is the request path for the target task id.
	path string
	// states are the task states an input may pick (state%len).
	states []state
	// object makes a fresh object ($BASE) for each input.
	object bool
	// seeds are well-formed bodies to start from (the malformed ones are
	// the committed corpus in testdata/fuzz).
	seeds []string
}

// fuzzBody runs the body fuzz target bt.
func fuzzBody(f *testing.F, bt bodyTarget) {
	for i, s := range bt.seeds {
		f.Add(byte(0), byte(i), []byte(s))
	}
	h := newFuzzHub(f)
	f.Fuzz(func(t *testing.T, who, st byte, body []byte) {
		state := bt.states[int(st)%len(bt.states)]
		tg := h.task(t, state)
		if bt.object {
			h.object(t, &tg)
		}
		name, tok := h.principal(t, who, tg)
		if tg.lease != "" && (state == claimed || state == running || state == rerun) {
			defer h.confirmer(tg)()
		}
		path := strings.ReplaceAll(bt.path, "{id}", strconv.FormatInt(tg.id, 10))
		path = strings.ReplaceAll(path, "{object}", strconv.FormatInt(tg.object, 10))
		b := expand(body, tg)
		h.send(t, fmt.Sprintf("%s %s as %s (the task %s), body %q", bt.method, path, name, state, b),
			fuzzRequest{method: bt.method, path: path, body: b, token: tok})
	})
}

// list is the JSON list of n copies of item: a seed at or past a list's
// bound (cks.MaxAddChildren, …), which is refused before it is decoded.
func list(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func FuzzCreateTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks", states: []state{open, running, completed}, seeds: []string{
		`{"type":"t","depends_on":` + list("$ID", cks.MaxDependsOn+1) + `}`,
		`{"type":"t","max_attempts":0,"priority":1001}`,
		`{"type":"t"}`,
		`{"type":"t","title":"x","description":"d","acceptance_criteria":"c","payload":{"a":[1,2]},"priority":5,"max_attempts":2}`,
		`{"type":"t","parent_id":$ID}`,
		`{"type":"t","depends_on":[$ID,$ID]}`,
		`{"type":"t","dedupe_key":"k","dedupe_once":true,"metadata":{"m":1}}`,
		`{"type":"t","payload":"s","created_by":"someone"}`,
	}})
}

func FuzzClaimTasks(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/claim", states: []state{open}, seeds: []string{
		`{}`,
		`{"worker":"w","types":["fuzz-1"],"n":3,"lease_s":60}`,
		`{"types":[],"n":1,"lease_s":0.5}`,
		`{"n":1000,"lease_s":86400}`,
		`{"n":0,"lease_s":0.5}`,
		`{"types":` + list(`"t"`, cks.MaxNames+1) + `}`,
	}})
}

func FuzzAnswerTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/answer", states: []state{needsInput, open}, seeds: []string{
		`{"text":"this one"}`, `{"text":"  "}`,
	}})
}

func FuzzCancelTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/cancel", states: []state{open, running, stopped, completed}, seeds: []string{
		`{}`, `{"reason":"not needed"}`,
	}})
}

func FuzzStopTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/stop", states: []state{open, claimed, running, stopped, needsInput, reviewing}, seeds: []string{
		`{"reason":"hold"}`,
		`{"reason":"hold","deadline":"2s","wait":true}`,
		`{"reason":"hold","deadline":"0","wait":false}`,
		`{"reason":"hold","deadline":"10m"}`,
	}})
}

func FuzzStartTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/start", states: []state{stopped, aborting, open}, seeds: []string{
		``, `{}`, `{"reason":"go on"}`,
	}})
}

func FuzzUpdateTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "PATCH", path: "/v1/tasks/{id}", states: []state{open, running, stopped, needsInput}, seeds: []string{
		`{"title":"new"}`,
		`{"description":"d","acceptance_criteria":"c","payload":[1],"priority":3,"metadata":{"k":"v"}}`,
		`{"add_depends_on":[$ID],"remove_depends_on":[1]}`,
		`{"add_children":[{"type":"child","title":"c"}],"cancel_children":[2]}`,
		`{"description":"d","deadline":"1s","wait":false}`,
		`{"add_children":` + list("1", 200_000) + `}`,
		`{"add_children":` + list(`{"type":"c"}`, cks.MaxAddChildren+1) + `}`,
		`{"add_children":[{"type":"c","depends_on":` + list("$ID", cks.MaxDependsOn+1) + `}]}`,
		`{"cancel_children":` + list("$ID", cks.MaxCancelChildren+1) + `}`,
		`{"add_depends_on":` + list("$ID", cks.MaxDependsOn+1) + `,"remove_depends_on":` + list("1", cks.MaxDependsOn+1) + `}`,
	}})
}

// FuzzBulkTasks sends bulk stops, by ids and by filters, past their bounds
// too (task_ids, a list of states).
func FuzzBulkTasks(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/bulk/stop", states: []state{open, stopped}, seeds: []string{
		`{"task_ids":[$ID],"reason":"r","wait":false}`,
		`{"state":"OPEN","type":"fuzz-1","reason":"r","limit":1,"wait":false}`,
		`{"q":"no such title","reason":"r","wait":false}`,
		`{"task_ids":` + list("$ID", 501) + `,"reason":"r"}`,
		`{"state":` + list(`"OPEN"`, cks.MaxNames+1) + `,"reason":"r"}`,
		`{"task_ids":[$ID],"state":"OPEN","reason":"r"}`, `{"reason":" "}`, `{"state":"OPEN","reason":"r","limit":0}`,
	}})
}

func FuzzMarkRunning(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/running", states: []state{claimed, running, aborting}, seeds: []string{
		`{"lease_token":"$LEASE"}`, `{"lease_token":""}`, `{}`,
	}})
}

func FuzzTouchTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/touch", states: []state{claimed, running, aborting}, seeds: []string{
		`{"lease_token":"$LEASE"}`, `{"lease_token":"x"}`,
	}})
}

func FuzzAddEvidence(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/evidence", states: []state{running, claimed}, seeds: []string{
		`{"lease_token":"$LEASE","kind":"log","body":"b"}`,
		`{"lease_token":"$LEASE","kind":"workspace","body":"/tmp/w"}`,
	}})
}

func FuzzRecordDecision(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/decisions", states: []state{running}, seeds: []string{
		`{"lease_token":"$LEASE","kind":"plan","text":"t","derived_from_revision":1}`,
	}})
}

func FuzzReuseWorkspace(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/workspace/reuse", states: []state{rerun}, seeds: []string{
		`{"lease_token":"$LEASE","path":"$WS","derived_from_revision":1}`,
	}})
}

func FuzzConfirmAbort(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/abort/confirm", states: []state{aborting, running}, seeds: []string{
		`{"lease_token":"$LEASE"}`,
	}})
}

func FuzzCompleteTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/complete", states: []state{running, claimed}, seeds: []string{
		`{"lease_token":"$LEASE","result":"r"}`, `{"lease_token":"$LEASE","needs_review":true}`,
	}})
}

func FuzzFailTask(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/fail", states: []state{running}, seeds: []string{
		`{"lease_token":"$LEASE","retryable":true,"reason":"r"}`, `{"lease_token":"$LEASE"}`,
	}})
}

func FuzzRequestInput(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/request-input", states: []state{running}, seeds: []string{
		`{"lease_token":"$LEASE","question":"which?"}`,
	}})
}

func FuzzReviewClaim(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/review/claim", states: []state{needsReview, reviewing}, seeds: []string{
		`{}`, `{"reviewer":"r","lease_s":60}`,
	}})
}

func FuzzReviewApprove(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/review/approve", states: []state{reviewing}, seeds: []string{
		`{"lease_token":"$LEASE","note":"ok"}`,
	}})
}

func FuzzReviewReject(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tasks/{id}/review/reject", states: []state{reviewing}, seeds: []string{
		`{"lease_token":"$LEASE","note":"again"}`,
	}})
}

func FuzzCreateObject(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/objects", states: []state{open}, seeds: []string{
		`{"question":"why?"}`, `{"question":"why?","corpus":"/srv/corpus"}`, `{"question":"why?","corpus":"rel"}`,
	}})
}

func FuzzWriteVersion(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/objects/{object}/versions", states: []state{open}, object: true, seeds: []string{
		`{"base_version":$BASE,"content":{"question":"q2"}}`, `{"base_version":$BASE,"content":[1]}`,
	}})
}

func FuzzCreateToken(f *testing.F) {
	fuzzBody(f, bodyTarget{method: "POST", path: "/v1/tokens", states: []state{open}, seeds: []string{
		`{"name":"n","grants":` + list(`{"permission":"read","resource":"/tasks"}`, cks.MaxGrants+1) + `}`,
		`{"name":"n","grants":[{"permission":"read","resource":"/tasks"}]}`,
		`{"task_id":$ID}`,
		`{"name":"n","grants":[{"permission":"admin","resource":"/tasks/$ID"}],"task_id":$ID}`,
	}})
}

// fuzzPath runs a fuzz target for one path segment: pattern holds {seg}.
func fuzzPath(f *testing.F, method, pattern string, seeds ...string) {
	for _, s := range seeds {
		f.Add(byte(0), s)
	}
	h := newFuzzHub(f)
	f.Fuzz(func(t *testing.T, who byte, seg string) {
		tg := h.task(t, open)
		name, tok := h.principal(t, who, tg)
		path := strings.ReplaceAll(pattern, "{seg}", url.PathEscape(seg))
		h.send(t, fmt.Sprintf("%s %s as %s", method, path, name), fuzzRequest{method: method, path: path, token: tok})
	})
}

func FuzzTaskPath(f *testing.F) {
	fuzzPath(f, "GET", "/v1/tasks/{seg}", "1", "0", "-1", "9223372036854775808", "1a", "a/b", "")
}

func FuzzObjectPath(f *testing.F) {
	fuzzPath(f, "GET", "/v1/objects/{seg}/versions", "1", "0", "x")
}

func FuzzProcessStatus(f *testing.F) {
	fuzzPath(f, "GET", "/v1/processes/{seg}", "exec", "no-such-kind", "")
}

func FuzzSweeperStatus(f *testing.F) {
	fuzzPath(f, "GET", "/v1/sweepers/{seg}", "lease_reaper", "no_such", "")
}

// FuzzRevokeToken: no fuzzed id can name a principal (they are random
// UUIDs), so every input is a refusal that must change nothing.
func FuzzRevokeToken(f *testing.F) {
	fuzzPath(f, "DELETE", "/v1/tokens/{seg}", "00000000-0000-0000-0000-000000000000", "x", "")
}

func FuzzProcessStop(f *testing.F) {
	fuzzPath(f, "POST", "/v1/processes/{seg}/stop", "exec", "critic", "no-such-kind", "00000000-0000-0000-0000-000000000000")
}

// FuzzSweeperControl starts and stops sweepers by fuzzed ids. A started
// sweeper's passes write in the background, so the database cannot show
// that a refused request changed nothing; the sweepers' states can.
func FuzzSweeperControl(f *testing.F) {
	for _, s := range []string{"lease_reaper", "fork_detection", "no_such", ""} {
		f.Add(byte(0), true, s)
		f.Add(byte(0), false, s)
	}
	h := newFuzzHub(f)
	f.Fuzz(func(t *testing.T, who byte, start bool, id string) {
		name, tok := h.principal(t, who, h.task(t, open))
		verb := "stop"
		if start {
			verb = "start"
		}
		path := "/v1/sweepers/" + url.PathEscape(id) + "/" + verb
		before := h.sweeperStates(t)
		status, hdr, body := h.serve(t, fuzzRequest{method: "POST", path: path, token: tok})
		what := fmt.Sprintf("POST %s as %s", path, name)
		checkAnswer(t, what, status, hdr, body)
		if status >= 400 {
			if after := h.sweeperStates(t); after != before {
				t.Fatalf("%s: answered %d but the sweepers changed:\nbefore %s\nafter  %s", what, status, before, after)
			}
		}
		if status < 300 && start {
			// Stop it again, so that no sweeper keeps writing.
			h.serve(t, fuzzRequest{method: "POST", path: "/v1/sweepers/" + url.PathEscape(id) + "/stop", token: h.admin})
		}
	})
}

// sweeperStates is the running and desired state of every sweeper.
func (h *fuzzHub) sweeperStates(t testing.TB) string {
	t.Helper()
	status, _, body := h.serve(t, fuzzRequest{method: "GET", path: "/v1/sweepers", token: h.admin})
	var l cks.SweeperList
	if err := json.Unmarshal(body, &l); status != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/sweepers: %d %v: %s", status, err, body)
	}
	var b strings.Builder
	for _, s := range l.Sweepers {
		desired := "-"
		if s.DesiredRunning != nil {
			desired = strconv.FormatBool(*s.DesiredRunning)
		}
		fmt.Fprintf(&b, "%s running=%t desired=%s; ", s.AgentID, s.Running, desired)
	}
	return b.String()
}

// fuzzQuery is a fuzz target for the query of a listing.
func fuzzQuery(f *testing.F, path string, seeds ...string) {
	for _, s := range seeds {
		f.Add(byte(0), s)
	}
	h := newFuzzHub(f)
	h.task(f, open)
	f.Fuzz(func(t *testing.T, who byte, query string) {
		name, tok := h.principal(t, who, target{id: 1})
		status, body := h.send(t, fmt.Sprintf("GET %s?%s as %s", path, query, name),
			fuzzRequest{method: "GET", path: path, rawQuery: query, token: tok})
		if status == http.StatusOK && !json.Valid(body) {
			t.Fatalf("GET %s?%s: 200 without JSON: %s", path, query, body)
		}
	})
}

func FuzzListTasksQuery(f *testing.F) {
	fuzzQuery(f, "/v1/tasks", "", "state=open,RUNNING&type=a,b", "cursor=3&limit=1000", "limit=1001", "stopped_longer_than=24h",
		"stopped_longer_than=-1h", "state=open&stopped_longer_than=1h", "state=nope", "cursor=-1", "limit=%zz", "limit=0",
		"sort=priority&cursor_key=5", "sort=updated&cursor=3&cursor_key=x", "parent_id=1&limit=2", "parent_id=1&sort=-id",
		"state="+strings.Repeat("OPEN,", cks.MaxNames+1), "type="+strings.Repeat("t&type=", cks.MaxNames)+"t")
}

func FuzzListObjectsQuery(f *testing.F) {
	fuzzQuery(f, "/v1/objects", "", "status=awaiting_research&kind=question", "cursor=1&limit=2", "limit=x")
}

// FuzzLogin posts arbitrary login forms: never a 5xx, the cookie is set
// only for a token that authenticates, and it then holds a session (never
// the token), the one write a login makes; a refused login changes nothing.
func FuzzLogin(f *testing.F) {
	for _, s := range []string{"token=", "token=cks_x", "token=%00", "a=b&token=1&token=2", "%zz"} {
		f.Add(s)
	}
	h := newFuzzHub(f)
	f.Add("token=" + url.QueryEscape(h.admin))
	f.Fuzz(func(t *testing.T, form string) {
		before := h.records(t)
		status, hdr, body := h.serve(t, fuzzRequest{method: "POST", path: "/login", body: []byte(form), form: true})
		if status >= 500 {
			t.Fatalf("POST /login %q: %d: %s", form, status, body)
		}
		resp := http.Response{Header: hdr}
		signedIn := false
		for _, c := range resp.Cookies() {
			if c.Name != api.CookieName || c.Value == "" {
				continue
			}
			signedIn = true
			a := h.store.Principals
			if _, _, err := a.AuthenticateSession(context.Background(), c.Value, backendtest.T0); err != nil {
				t.Fatalf("POST /login %q set cookie %q, which does not authenticate: %v", form, c.Value, err)
			}
			if _, err := a.Authenticate(context.Background(), c.Value); err == nil {
				t.Fatalf("POST /login %q put a bearer token in the cookie", form)
			}
		}
		if !signedIn {
			backendtest.DiffState(t, fmt.Sprintf("POST /login %q, refused,", form), before, h.records(t))
		}
	})
}

// TestFuzzHarnessSeesWrites keeps the fuzz targets' "a 4xx changed nothing"
// honest: the records they compare move with a write through the API, and
// not with what the process writes in the background (a published change).
func TestFuzzHarnessSeesWrites(t *testing.T) {
	h := newFuzzHub(t)
	before := h.records(t)
	status, body := h.send(t, "create", fuzzRequest{method: "POST", path: "/v1/tasks", body: []byte(`{"type":"t"}`), token: h.admin})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	if after := h.records(t); maps.Equal(after, before) {
		t.Fatalf("the records stayed %v across a write: the fuzz targets could not see a 4xx that writes", after)
	}
	// A change published in the background is not a request's write.
	before = h.records(t)
	if err := h.store.Driver().Executor().Notify(context.Background(), cks.TopicTasksMoved); err != nil {
		t.Fatal(err)
	}
	backendtest.DiffState(t, "a background publication", before, h.records(t))
	// And a request the API refuses leaves them alone.
	if status, _ := h.send(t, "bad", fuzzRequest{method: "POST", path: "/v1/tasks", body: []byte(`{"type":""}`), token: h.admin}); status != http.StatusBadRequest {
		t.Fatalf("empty type: %d, want 400", status)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// scenario is one row of sdk/scenarios.json: a worker scenario every
// client must pass against a real hub.
type scenario struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// scenarioHubEnv is the environment of the hubs the scenarios run against:
// the lease reaper every second, so a killed worker's task is taken back
// within a second of its lease running out (kill-reclaimed), not the
// default 30 s.
var scenarioHubEnv = []string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL=1s"}

// loadScenarios reads sdk/scenarios.json.
func loadScenarios(t testing.TB) []scenario {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "sdk", "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenarios []scenario `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("sdk/scenarios.json: %v", err)
	}
	return doc.Scenarios
}

// scenarioMark is how a suite says a scenario passed: a line ending
// "scenario ID ok" (a TAP diagnostic, "# scenario ID ok", in node:test's).
var scenarioMark = regexp.MustCompile(`(?m)\bscenario (\S+) ok$`)

// scenarioMarks returns the ids out says passed.
func scenarioMarks(out string) map[string]bool {
	ran := map[string]bool{}
	for _, m := range scenarioMark.FindAllStringSubmatch(out, -1) {
		ran[m[1]] = true
	}
	return ran
}

// scenarioGaps says which ids of table did not pass (are not in passed)
// and which ids in passed the table does not have; nil when neither.
func scenarioGaps(table []scenario, passed map[string]bool) error {
	var missing, unknown []string
	known := map[string]bool{}
	for _, s := range table {
		known[s.ID] = true
		if !passed[s.ID] {
			missing = append(missing, s.ID)
		}
	}
	for id := range passed {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	slices.Sort(unknown)
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("scenarios of the table not run or not passed: %s", strings.Join(missing, ", ")))
	}
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("scenarios named that the table (sdk/scenarios.json) does not have: %s", strings.Join(unknown, ", ")))
	}
	return errors.Join(errs...)
}

// holdToTable fails t unless lang passed every scenario of the table and
// named none beside them.
func holdToTable(t testing.TB, lang string, passed map[string]bool) {
	t.Helper()
	if err := scenarioGaps(loadScenarios(t), passed); err != nil {
		t.Errorf("%s: %v", lang, err)
	}
}

// TestScenarioTable: sdk/scenarios.json is a table of unique ids (lower
// case, digits, dashes) each with a one-line description, and a language's
// run is held to it — a scenario of the table it did not pass fails it, and
// so does one it names that the table lacks.
func TestScenarioTable(t *testing.T) {
	table := loadScenarios(t)
	if len(table) == 0 {
		t.Fatal("sdk/scenarios.json has no scenarios")
	}
	id := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, s := range table {
		if !id.MatchString(s.ID) || seen[s.ID] {
			t.Errorf("scenario id %q: want unique, lower case letters and digits joined by dashes", s.ID)
		}
		seen[s.ID] = true
		if s.Description == "" || strings.Contains(s.Description, "\n") {
			t.Errorf("scenario %s: want a one-line description, got %q", s.ID, s.Description)
		}
	}
	// What the suites print: Python's line, node:test's TAP diagnostics
	// (a subtest's indented); a test's name is no mark.
	out := "test_x (test_worker.WorkerTest.test_x) ... scenario completes ok\nok\n" +
		"ok 7 - scenario slots: claims no more than its slots\n# scenario listed-alive ok\n    # scenario slots-2 ok\n"
	if got, want := scenarioMarks(out), map[string]bool{"completes": true, "listed-alive": true, "slots-2": true}; !maps.Equal(got, want) {
		t.Errorf("marks %v, want %v", got, want)
	}
	all := maps.Clone(seen)
	if err := scenarioGaps(table, all); err != nil {
		t.Errorf("every scenario passed: %v", err)
	}
	less := maps.Clone(all)
	delete(less, table[0].ID)
	if err := scenarioGaps(table, less); err == nil || !strings.Contains(err.Error(), table[0].ID) {
		t.Errorf("%s not passed: %v, want it named", table[0].ID, err)
	}
	more := maps.Clone(all)
	more["no-such-scenario"] = true
	if err := scenarioGaps(table, more); err == nil || !strings.Contains(err.Error(), "no-such-scenario") {
		t.Errorf("an unknown id: %v, want it named", err)
	}
}

// TestGoScenarios runs the scenario table (sdk/scenarios.json) for the Go
// client on both backends: package client over HTTP with
// worker.Executor running each task (goWorker), against a real `cks
// serve`. Each scenario is a subtest named by its id; every id of the
// table must pass, and every one named must be in the table.
func TestGoScenarios(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHubEnv(t, "serve", scenarioHubEnv, "--database", db.url)
		s := scenarioHub{h: h, api: client.New(h.url, h.token)}
		passed := map[string]bool{}
		for _, id := range slices.Sorted(maps.Keys(goScenarios)) {
			passed[id] = t.Run(id, func(t *testing.T) { goScenarios[id](t, s) })
		}
		maps.DeleteFunc(passed, func(_ string, ok bool) bool { return !ok })
		holdToTable(t, "Go", passed)
	})
}

// scenarioHub is the hub a scenario runs against, with an admin client.
type scenarioHub struct {
	h   *hubProc
	api *client.Client
}

// uniqueName is a name no other scenario uses (task types, process kinds):
// scenarios share a hub.
func uniqueName(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
}

// create creates a task of typ with payload (JSON, or empty) and returns its id.
func (s scenarioHub) create(t testing.TB, typ, payload string) int64 {
	t.Helper()
	n := cks.NewTask{Type: typ, Title: typ}
	if payload != "" {
		n.Payload = json.RawMessage(payload)
	}
	task, _, err := s.api.CreateTask(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func (s scenarioHub) states(t testing.TB, ids []int64) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(getTask(t, s.api, id).State)
	}
	return out
}

// completions returns task's events into COMPLETED.
func completions(task cks.Task) []cks.TaskEvent {
	var out []cks.TaskEvent
	for _, e := range task.Events {
		if e.To == cks.TaskCompleted {
			out = append(out, e)
		}
	}
	return out
}

// goScenarios are the Go client's scenarios, by the table's ids.
var goScenarios = map[string]func(t *testing.T, s scenarioHub){
	"completes":               goCompletes,
	"slots":                   goSlots,
	"handler-error-fails":     goHandlerErrorFails,
	"stop-task-aborts":        goStopTaskAborts,
	"update-restarts":         goUpdateRestarts,
	"zombie-refused":          goZombieRefused,
	"kill-reclaimed":          goKillReclaimed,
	"listed-alive":            goListedAlive,
	"process-stop-drains":     goProcessStopDrains,
	"stop-ends-waiting-claim": goStopEndsWaitingClaim,
	"sigterm-drains":          goSigtermDrains,
}

// twoAtOnce lets resolvers through two at a time: each waits until another
// is waiting too, so none passes unless two run at once.
type twoAtOnce struct {
	mu      sync.Mutex
	waiting []chan struct{}
}

func (p *twoAtOnce) wait(ctx context.Context) error {
	p.mu.Lock()
	ch := make(chan struct{})
	p.waiting = append(p.waiting, ch)
	if len(p.waiting) == 2 {
		for _, w := range p.waiting {
			close(w)
		}
		p.waiting = nil
	}
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("no second resolver at once within 30 s")
	}
}

func goCompletes(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-sum")
	var ids []int64
	for i := range 6 {
		ids = append(ids, s.create(t, typ, fmt.Sprintf(`{"n":%d}`, i)))
	}
	var mu sync.Mutex
	var calls []int64
	var two twoAtOnce
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{Concurrency: 2})
	w.task(typ, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		mu.Lock()
		calls = append(calls, a.Task().ID)
		mu.Unlock()
		if err := two.wait(ctx); err != nil {
			return worker.Result{}, err
		}
		var in struct{ N int }
		if err := json.Unmarshal(a.Task().Payload, &in); err != nil {
			return worker.Result{}, worker.Permanent(err)
		}
		return worker.Result{Output: fmt.Sprintf(`{"double":%d}`, 2*in.N)}, nil
	})
	r := startGoWorker(t, w)
	waitFor(t, "six tasks COMPLETED", func() bool {
		return !slices.ContainsFunc(s.states(t, ids), func(st string) bool { return st != string(cks.TaskCompleted) })
	})
	mu.Lock()
	got := slices.Sorted(slices.Values(calls))
	mu.Unlock()
	if !slices.Equal(got, ids) {
		t.Fatalf("resolver calls %v, want each of %v once", got, ids)
	}
	for i, id := range ids {
		task := getTask(t, s.api, id)
		if want := fmt.Sprintf(`{"double":%d}`, 2*i); task.Result != want || len(completions(task)) != 1 {
			t.Errorf("task %d: result %q, %d completions; want %q once", id, task.Result, len(completions(task)), want)
		}
	}
	w.stop()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}
	row, err := s.api.ProcessStatus(context.Background(), w.kind)
	if err != nil || row.Status != cks.ProcessStopped || row.InstanceID != w.instanceID || row.ExitedAt.IsZero() {
		t.Fatalf("process row %+v (%v), want this instance stopped with exited_at", row, err)
	}
}

func goSlots(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-slots")
	var ids []int64
	for range 4 {
		ids = append(ids, s.create(t, typ, ""))
	}
	started, release := make(chan struct{}, 4), make(chan struct{})
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{Concurrency: 2})
	w.task(typ, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
			return worker.Result{}, nil
		case <-ctx.Done():
			return worker.Result{}, ctx.Err()
		}
	})
	startGoWorker(t, w)
	for range 2 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("two resolvers did not start")
		}
	}
	// Both slots are taken, so the worker claims nothing until one frees.
	if got := slices.Sorted(slices.Values(s.states(t, ids))); !slices.Equal(got, []string{"OPEN", "OPEN", "RUNNING", "RUNNING"}) {
		t.Fatalf("states %v with both slots taken, want two RUNNING, two OPEN", got)
	}
	close(release)
	waitFor(t, "four tasks COMPLETED", func() bool {
		return !slices.ContainsFunc(s.states(t, ids), func(st string) bool { return st != string(cks.TaskCompleted) })
	})
}

func goHandlerErrorFails(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-fail")
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	w.task(typ, func(context.Context, *worker.Attempt) (worker.Result, error) {
		return worker.Result{}, worker.Permanent(errors.New("bad input"))
	})
	startGoWorker(t, w)
	id := s.create(t, typ, "")
	task := waitState(t, s.api, id, cks.TaskFailed)
	if !strings.Contains(task.LastError, "bad input") {
		t.Fatalf("last_error %q, want the resolver's error", task.LastError)
	}
}

func goStopTaskAborts(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-abort")
	started, seen := make(chan struct{}), make(chan error, 1)
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	w.task(typ, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		close(started)
		select {
		case <-ctx.Done():
			seen <- context.Cause(ctx)
		case <-time.After(60 * time.Second):
			seen <- errors.New("no abort within 60 s")
		}
		return worker.Result{Output: "should not be recorded"}, nil
	})
	startGoWorker(t, w)
	id := s.create(t, typ, "")
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the resolver did not start")
	}
	// stop_task waits for the worker's confirmation: abort_confirmed, in its answer and on the task.
	stop, err := s.api.StopTask(context.Background(), id, client.StopRequest{Reason: "operator stop", Deadline: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if stop.From != cks.TaskRunning || stop.Task.State != cks.TaskStopped || stop.Abort == nil || stop.Abort.Outcome != cks.AbortConfirmed {
		t.Fatalf("stop: from %s to %s, abort %+v; want RUNNING → STOPPED, abort_confirmed", stop.From, stop.Task.State, stop.Abort)
	}
	if cause := <-seen; !errors.Is(cause, cks.ErrLeaseLost) {
		t.Fatalf("the resolver's context ended with %v, want the lost lease", cause)
	}
	task := getTask(t, s.api, id)
	if task.State != cks.TaskStopped || task.LastAbort == nil || task.LastAbort.Outcome != cks.AbortConfirmed || task.Result != "" {
		t.Fatalf("task %s, last abort %+v, result %q; want STOPPED, abort_confirmed, no result", task.State, task.LastAbort, task.Result)
	}
}

func goUpdateRestarts(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-update")
	started := make(chan struct{})
	var mu sync.Mutex
	var runs []string
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	w.task(typ, func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		var in struct{ V int }
		if err := json.Unmarshal(a.Task().Payload, &in); err != nil {
			return worker.Result{}, worker.Permanent(err)
		}
		mu.Lock()
		runs = append(runs, string(a.Task().Payload))
		mu.Unlock()
		if in.V == 1 {
			close(started)
			<-ctx.Done() // the update's abort
			return worker.Result{Output: "v1 should not be recorded"}, nil
		}
		return worker.Result{Output: fmt.Sprintf("done v%d", in.V)}, nil
	})
	startGoWorker(t, w)
	id := s.create(t, typ, `{"v":1}`)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the resolver did not start")
	}
	up, err := s.api.UpdateTask(context.Background(), id, client.UpdateRequest{
		Patch: cks.TaskPatch{Payload: json.RawMessage(`{"v":2}`)}, Deadline: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if up.Path != cks.UpdateRestart || up.Abort == nil || up.Abort.Outcome != cks.AbortConfirmed {
		t.Fatalf("update: path %s, abort %+v; want stop_apply_start, abort_confirmed", up.Path, up.Abort)
	}
	task := waitState(t, s.api, id, cks.TaskCompleted)
	mu.Lock()
	defer mu.Unlock()
	if task.Result != "done v2" || task.Restarts != 1 || task.Revision != 2 || !slices.Equal(runs, []string{`{"v":1}`, `{"v":2}`}) {
		t.Fatalf("result %q, restarts %d, revision %d, runs %v; want done v2 after one restart at revision 2, runs v1 then v2",
			task.Result, task.Restarts, task.Revision, runs)
	}
}

func goZombieRefused(t *testing.T, s scenarioHub) {
	ctx := context.Background()
	typ := uniqueName("go-zombie")
	id := s.create(t, typ, "")
	claim := func(worker string) []cks.ClaimedTask {
		out, err := s.api.ClaimWith(ctx, cks.ClaimTasksInput{Worker: worker, Types: cks.Names{typ}, LeaseS: 1, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		return out.Tasks
	}
	zombie := claim("zombie")
	if len(zombie) != 1 || zombie[0].ID != id {
		t.Fatalf("claimed %+v, want task %d", zombie, id)
	}
	// Its lease of a second runs out unrenewed; the next claim (or the
	// reaper first) takes the task back, and this one holds it.
	var holder []cks.ClaimedTask
	waitFor(t, "another claim to take the task back", func() bool {
		holder = claim("holder")
		return len(holder) == 1
	})
	_, err := s.api.Complete(ctx, id, zombie[0].LeaseToken, false, "late result")
	if !errors.Is(err, cks.ErrLeaseLost) || !client.IsLeaseLost(err) {
		t.Fatalf("the zombie's completion: %v, want lease_lost (errors.Is cks.ErrLeaseLost)", err)
	}
	var ce *cks.Error
	if !errors.As(err, &ce) || ce.Status != 409 {
		t.Fatalf("the zombie's completion: %#v, want a 409 *cks.Error", err)
	}
	if task := getTask(t, s.api, id); task.State != cks.TaskRunning || task.ClaimedBy != "holder" || task.Result != "" {
		t.Fatalf("after the zombie: %s by %s, result %q; want RUNNING by holder, no result", task.State, task.ClaimedBy, task.Result)
	}
	if _, err := s.api.Complete(ctx, id, holder[0].LeaseToken, false, "done"); err != nil {
		t.Fatalf("the holder's completion: %v", err)
	}
}

func goKillReclaimed(t *testing.T, s scenarioHub) {
	typ, kind := uniqueName("go-kill"), uniqueName("go-worker")
	first := startGoWorkerProc(t, goWorkerSpec{URL: s.h.url, Token: s.h.token, Kind: kind, Type: typ, Lease: 2 * time.Second, Hold: true})
	id := s.create(t, typ, "")
	waitFor(t, "the worker process to hold the task", func() bool {
		task := getTask(t, s.api, id)
		return task.State == cks.TaskRunning && strings.HasPrefix(task.ClaimedBy, kind+":")
	})
	killScenarioWorker(t, first)
	var calls int
	var mu sync.Mutex
	second := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	second.task(typ, func(context.Context, *worker.Attempt) (worker.Result, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return worker.Result{Output: "done by the second"}, nil
	})
	startGoWorker(t, second)
	task := waitState(t, s.api, id, cks.TaskCompleted)
	mu.Lock()
	defer mu.Unlock()
	if err := doneOnceAfterKill(task, second.name(), "done by the second"); err != nil || calls != 1 {
		t.Fatalf("%v; the second worker's resolver ran %d times, want once", err, calls)
	}
}

// killScenarioWorker kills p with SIGKILL and waits for it.
func killScenarioWorker(t testing.TB, p *agentProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != -1 {
		t.Fatalf("killed worker exited %d, want killed by a signal:\n%s", code, p.stderr.String())
	}
}

// doneOnceAfterKill says what is wrong with task unless the lease reaper
// took it back from a RUNNING attempt (lease expired: the killed worker's
// attempt ended so, not by a write of its own) and by completed it, once,
// with result.
func doneOnceAfterKill(task cks.Task, by, result string) error {
	reclaimed := slices.ContainsFunc(task.Events, func(e cks.TaskEvent) bool {
		return e.Actor == "reaper" && e.Reason == "lease expired" && e.From == cks.TaskRunning && e.To == cks.TaskOpen
	})
	done := completions(task)
	if task.State != cks.TaskCompleted || task.Result != result || len(done) != 1 || done[0].Actor != by || !reclaimed {
		return fmt.Errorf("task %s, result %q, completions %+v, reclaimed by the reaper %v; want COMPLETED once by %q with %q after the reclaim",
			task.State, task.Result, done, reclaimed, by, result)
	}
	return nil
}

func goListedAlive(t *testing.T, s scenarioHub) {
	typ := uniqueName("go-seen")
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	w.task(typ, func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{}, nil })
	startGoWorker(t, w)
	alive := true
	waitFor(t, "the worker listed alive under its kind", func() bool {
		list, err := s.api.Processes(context.Background(), cks.ListProcessesInput{Kind: cks.Names{w.kind}, Alive: &alive})
		return err == nil && slices.ContainsFunc(list.Processes, func(p cks.Process) bool { return p.InstanceID == w.instanceID })
	})
	row, err := s.api.ProcessStatus(context.Background(), w.kind)
	if err != nil || row.ProcessKind != w.kind || row.Status != cks.ProcessAlive || !slices.Equal(row.TaskTypes, []string{typ}) {
		t.Fatalf("process status %+v (%v), want %s alive with task types [%s]", row, err, w.kind, typ)
	}
}

func goProcessStopDrains(t *testing.T, s scenarioHub) {
	ctx := context.Background()
	typ := uniqueName("go-drain")
	started, release := make(chan struct{}), make(chan struct{})
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{})
	w.task(typ, func(context.Context, *worker.Attempt) (worker.Result, error) {
		close(started)
		<-release
		return worker.Result{Output: "drained"}, nil
	})
	r := startGoWorker(t, w)
	id := s.create(t, typ, "")
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the resolver did not start")
	}
	waitFor(t, "the worker to report its task", func() bool {
		row, err := s.api.ProcessStatus(ctx, w.kind)
		return err == nil && row.CurrentTaskID != nil && *row.CurrentTaskID == id
	})
	stop, err := s.api.StopProcess(ctx, w.kind)
	if err != nil || !stop.Found || stop.InstanceID != w.instanceID {
		t.Fatalf("request_process_stop: %+v (%v), want this instance found", stop, err)
	}
	waitFor(t, "the worker to see the stop", w.draining)
	close(release)
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}
	if task := getTask(t, s.api, id); task.State != cks.TaskCompleted || task.Result != "drained" {
		t.Fatalf("task %s, result %q; want COMPLETED, drained", task.State, task.Result)
	}
	row, err := s.api.ProcessStatus(ctx, w.kind)
	if err != nil || row.InstanceID != w.instanceID || row.Status != cks.ProcessStopped ||
		row.DesiredState != cks.DesiredStopRequested || row.ExitedAt.IsZero() {
		t.Fatalf("process row %+v (%v), want this instance stopped at its request, with exited_at", row, err)
	}
}

func goStopEndsWaitingClaim(t *testing.T, s scenarioHub) {
	w := newGoWorker(s.api, uniqueName("go-worker"), goWorkerOptions{Liveness: time.Hour, ClaimWait: 60 * time.Second})
	w.task(uniqueName("go-idle"), func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{}, nil })
	r := startGoWorker(t, w)
	waitFor(t, "the worker's first report", func() bool {
		row, err := s.api.ProcessStatus(context.Background(), w.kind)
		return err == nil && row.InstanceID == w.instanceID
	})
	if _, err := s.api.StopProcess(context.Background(), w.kind); err != nil {
		t.Fatal(err)
	}
	// Its next report is an hour away: only the claim can say so.
	if err := r.wait(); err != nil || !w.draining() {
		t.Fatalf("run: %v, draining %v", err, w.draining())
	}
}

func goSigtermDrains(t *testing.T, s scenarioHub) {
	kind := uniqueName("go-worker")
	p := startGoWorkerProc(t, goWorkerSpec{URL: s.h.url, Token: s.h.token, Kind: kind, Type: uniqueName("go-sig")})
	waitFor(t, "the worker process alive", func() bool {
		row, err := s.api.ProcessStatus(context.Background(), kind)
		return err == nil && row.Status == cks.ProcessAlive
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 || p.stdout.String() != "run returned\n" {
		t.Fatalf("exit %d, stdout %q, want 0 and run returned:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	row, err := s.api.ProcessStatus(context.Background(), kind)
	if err != nil || row.PID != p.cmd.Process.Pid || row.Status != cks.ProcessStopped || row.ExitedAt.IsZero() {
		t.Fatalf("process row %+v (%v), want pid %d stopped with exited_at", row, err, p.cmd.Process.Pid)
	}
}

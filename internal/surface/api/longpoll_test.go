package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestClaimLongPoll (both backends): POST /v1/tasks/claim with wait_s and
// nothing to claim is held, and answered with the task the moment one of
// its types is created; held past its wait_s (on the hub's clock) it
// answers no task; a wait_s out of 0 to 60 is a 400 naming wait_s that
// holds nothing and claims nothing.
func TestClaimLongPoll(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		claim := func(body string) <-chan cks.ClaimedTasks {
			done := make(chan cks.ClaimedTasks, 1)
			go func() {
				resp, out := f.send(t, request{method: "POST", path: "/v1/tasks/claim", bearer: f.token,
					contentType: "application/json", body: strings.NewReader(body)})
				var got cks.ClaimedTasks
				if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(out), &got) != nil {
					t.Errorf("claim %s: %d %s", body, resp.StatusCode, out)
				}
				done <- got
			}()
			return done
		}
		held := func() {
			t.Helper()
			deadline := time.Now().Add(time.Minute)
			for f.store.Tasks.ClaimsWaiting() != 1 {
				if time.Now().After(deadline) {
					t.Fatal("the claim is not held")
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		answered := func(done <-chan cks.ClaimedTasks) cks.ClaimedTasks {
			t.Helper()
			select {
			case got := <-done:
				return got
			case <-time.After(time.Minute):
				t.Fatal("the held claim was not answered")
				return cks.ClaimedTasks{}
			}
		}

		done := claim(`{"types":["longpoll"],"wait_s":30,"running":true}`)
		held()
		task, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "longpoll", Title: "arrives while the claim waits"})
		if err != nil {
			t.Fatal(err)
		}
		if got := answered(done); len(got.Tasks) != 1 || got.Tasks[0].ID != task.ID || got.Tasks[0].State != cks.TaskRunning ||
			got.Tasks[0].LeaseToken == "" {
			t.Fatalf("held claim answered %+v, want task %d RUNNING with its lease", got.Tasks, task.ID)
		}

		done = claim(`{"types":["longpoll"],"wait_s":30}`)
		held()
		f.clock.Advance(30 * time.Second)
		if got := answered(done); len(got.Tasks) != 0 {
			t.Fatalf("claim at the end of its wait answered %+v, want no task", got.Tasks)
		}

		other, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "longpoll", Title: "never claimed by a bad wait"})
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{`{"wait_s":61}`, `{"wait_s":-1}`, `{"wait_s":"soon"}`} {
			resp, out := f.send(t, request{method: "POST", path: "/v1/tasks/claim", bearer: f.token,
				contentType: "application/json", body: strings.NewReader(body)})
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out, "wait_s") {
				t.Fatalf("claim %s: %d %s, want 400 naming wait_s", body, resp.StatusCode, out)
			}
		}
		if got, err := f.store.Tasks.GetTask(context.Background(), other.ID); err != nil || got.State != cks.TaskOpen {
			t.Fatalf("task after the refused claims: %s, %v; want OPEN", got.State, err)
		}
	})
}

// TestClaimForAProcessAskedToStop (both backends, issue 41): a claim that
// names its process (instance_id, as report_process reports it) ends its
// wait with stop_requested, nothing claimed, the moment the process is
// asked to stop — on no clock: the hub's stands still — and claims nothing
// while it is asked to stop, though a task of its type is OPEN. Another
// principal's process is a 409, and claims nothing either.
func TestClaimForAProcessAskedToStop(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		f.mustDo(t, f.token, "POST", "/v1/processes/summarizer/report", `{"instance_id":"sum-1"}`)
		done := make(chan string, 1)
		go func() { // no deadline of its own: the select below has one
			req, _ := http.NewRequest("POST", f.srv.URL+"/v1/tasks/claim",
				strings.NewReader(`{"types":["summarize"],"wait_s":60,"instance_id":"sum-1"}`))
			req.Header.Set("Authorization", "Bearer "+f.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			done <- string(b)
		}()
		deadline := time.Now().Add(time.Minute)
		for f.store.Tasks.ClaimsWaiting() != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the claim is not held")
			}
			time.Sleep(2 * time.Millisecond)
		}
		f.mustDo(t, f.token, "POST", "/v1/processes/sum-1/stop", `{}`)
		var got cks.ClaimedTasks
		select {
		case out := <-done:
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("claim answered %s", out)
			}
		case <-time.After(time.Minute):
			t.Fatal("the waiting claim did not end when its process was asked to stop")
		}
		if !got.StopRequested || len(got.Tasks) != 0 {
			t.Fatalf("claim answered %+v, want stop_requested and no task", got)
		}

		task, _, err := f.store.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "summarize", Title: "not for a stopping process"})
		if err != nil {
			t.Fatal(err)
		}
		out := f.mustDo(t, f.token, "POST", "/v1/tasks/claim", `{"types":["summarize"],"instance_id":"sum-1"}`)
		if err := json.Unmarshal([]byte(out), &got); err != nil || !got.StopRequested || len(got.Tasks) != 0 {
			t.Fatalf("claim for a stopping process answered %s, want stop_requested and no task", out)
		}
		other := f.tokenWith(t, cks.Grant{Resource: "/", Permission: "append"}, cks.Grant{Resource: "/", Permission: "read"})
		if code, out := f.do(t, other, "POST", "/v1/tasks/claim", `{"types":["summarize"],"instance_id":"sum-1"}`); code != http.StatusConflict {
			t.Fatalf("a claim for another principal's process: %d %s, want 409", code, out)
		}
		if st := f.stateOf(t, task.ID); st != cks.TaskOpen {
			t.Fatalf("task %d is %s after claims for a stopping process, want OPEN", task.ID, st)
		}
	})
}

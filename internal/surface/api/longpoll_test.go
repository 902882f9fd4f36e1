package api_test

import (
	"context"
	"encoding/json"
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

package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// httpClaim claims one task of typ over HTTP as worker with token and
// returns its id, the lease token and the task-scoped agent credential the
// answer carries (read from the raw JSON, as an agent in any language would).
func (f *fixture) httpClaim(t testing.TB, token, typ, worker string) (id int64, lease, agentTok string) {
	t.Helper()
	status, body := f.do(t, token, "POST", "/v1/tasks/claim", fmt.Sprintf(`{"worker":%q,"types":[%q]}`, worker, typ))
	var out struct {
		Tasks []struct {
			ID         int64  `json:"task_id"`
			LeaseToken string `json:"lease_token"`
		} `json:"tasks"`
		AgentTokens map[string]string `json:"agent_tokens"`
	}
	if err := json.Unmarshal([]byte(body), &out); status != http.StatusOK || err != nil || len(out.Tasks) != 1 {
		t.Fatalf("claim %s as %s: %d %s", typ, worker, status, body)
	}
	c := out.Tasks[0]
	if c.LeaseToken == "" || out.AgentTokens[fmt.Sprint(c.ID)] == "" {
		t.Fatalf("claim answer without the lease token or the agent credential: %s", body)
	}
	return c.ID, c.LeaseToken, out.AgentTokens[fmt.Sprint(c.ID)]
}

// leaseIn returns the lease_token a task body shows, if any.
func leaseIn(body string) string {
	var v struct {
		LeaseToken string `json:"lease_token"`
	}
	json.Unmarshal([]byte(body), &v) //nolint:errcheck // absent is the answer
	return v.LeaseToken
}

// TestRevokedExecutorCannotTakeOverTheLease reproduces the fencing bypass of
// issue 12: an executor whose lease was revoked (stop → start → another
// worker claims) must not be able to learn the new holder's lease token —
// neither with its own task-scoped credential nor with any other credential
// that may read the task — and so cannot complete the task under it.
func TestRevokedExecutorCannotTakeOverTheLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		worker := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend})
		status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"build","title":"x"}`)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
		id, lease1, agent1 := f.httpClaim(t, worker, "build", "w1")
		path := fmt.Sprintf("/v1/tasks/%d", id)
		if status, body := f.do(t, f.token, "POST", path+"/stop", `{"reason":"hold","wait":false}`); status != http.StatusOK {
			t.Fatalf("stop: %d %s", status, body)
		}
		if status, body := f.do(t, f.token, "POST", path+"/start", `{}`); status != http.StatusOK {
			t.Fatalf("start: %d %s", status, body)
		}
		_, lease2, _ := f.httpClaim(t, worker, "build", "w2")
		if lease2 == lease1 {
			t.Fatal("the second claim got the revoked token")
		}
		// Every credential that may read the task: the revoked executor's,
		// one made for the task by an operator (read+append on /tasks/ID),
		// a reader of the whole ledger, and the admin.
		readers := map[string]string{
			"revoked executor": agent1,
			"task credential": f.tokenWith(t, cks.Grant{Resource: auth.TaskResource(id), Permission: auth.PermRead},
				cks.Grant{Resource: auth.TaskResource(id), Permission: auth.PermAppend}),
			"ledger reader": f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermRead},
				cks.Grant{Resource: "/tasks", Permission: auth.PermAppend}),
			"admin": f.token,
		}
		for who, tok := range readers {
			for _, p := range []string{path, "/v1/tasks", "/v1/tasks?state=CLAIMED"} {
				_, body := f.do(t, tok, "GET", p, "")
				if strings.Contains(body, lease2) || strings.Contains(body, lease1) {
					t.Errorf("%s: GET %s shows a lease token: %s", who, p, body)
				}
				// Whatever it read, it tries to complete the task with it.
				stolen := leaseIn(body)
				if stolen == "" {
					continue
				}
				if status, out := f.do(t, tok, "POST", path+"/complete", fmt.Sprintf(`{"lease_token":%q,"result":"stolen"}`, stolen)); status == http.StatusOK {
					t.Errorf("%s completed the task with the token GET %s showed: %s", who, p, out)
				}
			}
		}
		// The rightful executor still holds its lease and completes.
		if status, body := f.do(t, worker, "POST", path+"/complete", fmt.Sprintf(`{"lease_token":%q,"result":"mine"}`, lease2)); status != http.StatusOK {
			t.Fatalf("the rightful executor's complete: %d %s", status, body)
		}
		if got := backendtest.MustGet(t, f.store, id); got.State != "COMPLETED" || got.Result != "mine" {
			t.Fatalf("task after the run: %s %q, want COMPLETED by the rightful executor", got.State, got.Result)
		}
	})
}

// TestClaimCredentialEndsWithItsLease: the task-scoped credential of an HTTP
// claim is refused (401) the moment its lease ends — by complete, fail,
// stop, cancel or a reclaim — with no row deleted for it: the claim wrote
// none (auth.TaskToken).
func TestClaimCredentialEndsWithItsLease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		worker := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend})
		for _, c := range []struct {
			name string
			end  func(t *testing.T, id int64, lease, agent string)
		}{
			{"complete", func(t *testing.T, id int64, lease, agent string) {
				f.mustDo(t, agent, "POST", fmt.Sprintf("/v1/tasks/%d/complete", id), fmt.Sprintf(`{"lease_token":%q}`, lease))
			}},
			{"fail", func(t *testing.T, id int64, lease, agent string) {
				f.mustDo(t, agent, "POST", fmt.Sprintf("/v1/tasks/%d/fail", id), fmt.Sprintf(`{"lease_token":%q,"reason":"x"}`, lease))
			}},
			{"retryable fail", func(t *testing.T, id int64, lease, agent string) {
				f.mustDo(t, agent, "POST", fmt.Sprintf("/v1/tasks/%d/fail", id), fmt.Sprintf(`{"lease_token":%q,"retryable":true,"reason":"x"}`, lease))
			}},
			{"request input", func(t *testing.T, id int64, lease, agent string) {
				f.mustDo(t, agent, "POST", fmt.Sprintf("/v1/tasks/%d/request-input", id), fmt.Sprintf(`{"lease_token":%q,"question":"?"}`, lease))
			}},
			{"stop", func(t *testing.T, id int64, _, _ string) {
				f.mustDo(t, f.token, "POST", fmt.Sprintf("/v1/tasks/%d/stop", id), `{"reason":"hold","wait":false}`)
			}},
			{"material update", func(t *testing.T, id int64, _, _ string) {
				f.mustDo(t, f.token, "PATCH", fmt.Sprintf("/v1/tasks/%d", id), `{"description":"new","wait":false}`)
			}},
			{"cancel", func(t *testing.T, id int64, _, _ string) {
				f.mustDo(t, f.token, "POST", fmt.Sprintf("/v1/tasks/%d/cancel", id), `{"reason":"no"}`)
			}},
			{"reclaim", func(t *testing.T, id int64, _, _ string) {
				f.clock.Advance(2 * time.Hour)
				if n, err := f.store.Tasks.ReclaimExpired(t.Context(), f.clock.Now()); err != nil || n != 1 {
					t.Fatalf("reclaim: %d %v", n, err)
				}
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				typ := "end-" + strings.ReplaceAll(c.name, " ", "-")
				f.mustDo(t, f.token, "POST", "/v1/tasks", fmt.Sprintf(`{"type":%q}`, typ))
				id, lease, agent := f.httpClaim(t, worker, typ, "w")
				path := fmt.Sprintf("/v1/tasks/%d", id)
				if status, body := f.do(t, agent, "GET", path, ""); status != http.StatusOK {
					t.Fatalf("the credential before its lease ended: %d %s", status, body)
				}
				c.end(t, id, lease, agent)
				if status, body := f.do(t, agent, "GET", path, ""); status != http.StatusUnauthorized {
					t.Fatalf("the credential after its lease ended (%s): %d %s, want 401", c.name, status, body)
				}
				ps, err := f.store.Principals.ListPrincipals(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					if strings.HasPrefix(p.Name, "task/") {
						t.Fatalf("principal %+v: a claim wrote a credential row", p)
					}
				}
			})
		}
	})
}

// TestLeaseRunsOutOverHTTP (issue 37 item 3): over HTTP, a lease of
// lease_s 1 that ran out unrenewed — 5 s later, no reaper pass — is lost:
// complete_task is 409 lease_lost and completes nothing, touch_task says
// held false and revives nothing, and the next claim takes the task as
// attempt 2. A claim without lease_s gets the hub's default lease.
func TestLeaseRunsOutOverHTTP(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		f.mustDo(t, f.token, "POST", "/v1/tasks", `{"type":"short"}`)
		status, body := f.do(t, f.token, "POST", "/v1/tasks/claim", `{"worker":"dead","types":["short"],"lease_s":1}`)
		var claimed struct {
			Tasks []struct {
				ID         int64     `json:"task_id"`
				LeaseToken string    `json:"lease_token"`
				Expires    time.Time `json:"lease_expires_at"`
				Claimed    time.Time `json:"claimed_at"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(body), &claimed); status != http.StatusOK || err != nil || len(claimed.Tasks) != 1 {
			t.Fatalf("claim: %d %s", status, body)
		}
		c := claimed.Tasks[0]
		f.clock.Advance(5 * time.Second)
		status, body = f.do(t, f.token, "POST", fmt.Sprintf("/v1/tasks/%d/complete", c.ID), fmt.Sprintf(`{"lease_token":%q,"result":"late"}`, c.LeaseToken))
		if e := decodeError(t, body); status != http.StatusConflict || e.Error.Code != "lease_lost" {
			t.Fatalf("complete 5 s after a 1 s lease ran out: %d %s, want 409 lease_lost", status, body)
		}
		status, body = f.do(t, f.token, "POST", fmt.Sprintf("/v1/tasks/%d/touch", c.ID), fmt.Sprintf(`{"lease_token":%q}`, c.LeaseToken))
		if status != http.StatusOK || !strings.Contains(body, `"held":false`) {
			t.Fatalf("touch after the lease ran out: %d %s, want held false", status, body)
		}
		task, err := f.store.Tasks.GetTask(t.Context(), c.ID)
		if err != nil || task.State != cks.TaskClaimed || task.Result != "" || !task.LeaseExpiresAt.Equal(c.Expires) {
			t.Fatalf("after the late calls: %s, result %q, lease until %s (%v); want CLAIMED as it was", task.State, task.Result, task.LeaseExpiresAt, err)
		}
		status, body = f.do(t, f.token, "POST", "/v1/tasks/claim", `{"worker":"next","types":["short"]}`)
		var next struct {
			Tasks []struct {
				ID       int64     `json:"task_id"`
				Attempts int       `json:"attempts"`
				Expires  time.Time `json:"lease_expires_at"`
				Claimed  time.Time `json:"claimed_at"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(body), &next); status != http.StatusOK || err != nil || len(next.Tasks) != 1 ||
			next.Tasks[0].ID != c.ID || next.Tasks[0].Attempts != 2 {
			t.Fatalf("the next claim: %d %s; want task %d as attempt 2", status, body, c.ID)
		}
		if got := next.Tasks[0].Expires.Sub(next.Tasks[0].Claimed); got != ledger.DefaultLease {
			t.Fatalf("a claim without lease_s: a lease of %s, want the default %s", got, ledger.DefaultLease)
		}
	})
}

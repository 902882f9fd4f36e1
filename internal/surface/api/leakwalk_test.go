package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// leakState is a ledger with leases in every shape, made over HTTP as
// agents and operators make them: live leases (CLAIMED, RUNNING, a review
// lease), revoked ones (a STOPPED task with a pending abort, a task stopped,
// started and claimed again, a cancelled one and one restarted by an
// update), so that past and present lease tokens exist.
type leakState struct {
	tasks []int64
	// secrets are every lease token handed out (and its stored hash) and
	// every agent credential: no answer to anyone else may contain one.
	secrets []string
	// agent is the live task-scoped credential of task restarted.
	agent     string
	restarted int64
}

func newLeakState(t *testing.T, f *fixture) leakState {
	t.Helper()
	worker := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend})
	var st leakState
	lease := func(tok string) {
		st.secrets = append(st.secrets, tok, driver.HashLeaseToken(tok))
	}
	create := func(typ string) int64 {
		var out struct {
			Task struct {
				ID int64 `json:"task_id"`
			} `json:"task"`
		}
		json.Unmarshal([]byte(f.mustDo(t, f.token, "POST", "/v1/tasks", fmt.Sprintf(`{"type":%q,"title":%q}`, typ, typ))), &out) //nolint:errcheck
		st.tasks = append(st.tasks, out.Task.ID)
		return out.Task.ID
	}
	claim := func(typ, w string, running bool) (int64, string) {
		id, tok, agent := f.httpClaim(t, worker, typ, w)
		lease(tok)
		st.secrets = append(st.secrets, agent)
		if running {
			f.mustDo(t, worker, "POST", fmt.Sprintf("/v1/tasks/%d/running", id), fmt.Sprintf(`{"lease_token":%q}`, tok))
		}
		return id, tok
	}
	path := func(id int64, action string) string { return fmt.Sprintf("/v1/tasks/%d%s", id, action) }
	for _, typ := range []string{"claimed", "running", "stopped", "restarted", "review", "cancelled", "updated"} {
		create(typ)
	}
	claim("claimed", "w1", false)
	claim("running", "w1", true)
	id, _ := claim("stopped", "w1", true)
	f.mustDo(t, f.token, "POST", path(id, "/stop"), `{"reason":"hold","wait":false}`)
	id, first := claim("restarted", "w1", true)
	f.mustDo(t, f.token, "POST", path(id, "/stop"), `{"reason":"hold","wait":false}`)
	f.mustDo(t, f.token, "POST", path(id, "/abort/confirm"), fmt.Sprintf(`{"lease_token":%q}`, first))
	f.mustDo(t, f.token, "POST", path(id, "/start"), `{}`)
	id, tok, agent := f.httpClaim(t, worker, "restarted", "w2")
	lease(tok)
	st.secrets = append(st.secrets, agent)
	f.mustDo(t, agent, "POST", path(id, "/running"), fmt.Sprintf(`{"lease_token":%q}`, tok))
	st.agent, st.restarted = agent, id
	id, tok = claim("review", "w1", true)
	f.mustDo(t, worker, "POST", path(id, "/complete"), fmt.Sprintf(`{"lease_token":%q,"needs_review":true}`, tok))
	var review struct {
		LeaseToken string `json:"lease_token"`
	}
	json.Unmarshal([]byte(f.mustDo(t, f.token, "POST", path(id, "/review/claim"), `{"reviewer":"rev"}`)), &review) //nolint:errcheck
	if review.LeaseToken == "" {
		t.Fatal("review claim answered no lease token")
	}
	lease(review.LeaseToken)
	id, _ = claim("cancelled", "w1", true)
	f.mustDo(t, f.token, "POST", path(id, "/cancel"), `{"reason":"gone"}`)
	id, _ = claim("updated", "w1", true)
	f.mustDo(t, f.token, "PATCH", path(id, ""), `{"description":"new","wait":false}`)
	return st
}

// leaks fails the test when body holds one of st's secrets.
func (st leakState) leaks(t *testing.T, who, what, body string) {
	t.Helper()
	for _, s := range st.secrets {
		if strings.Contains(body, s) {
			t.Errorf("%s: %s shows a lease token, its hash or an agent credential (%s…): %.400s", who, what, s[:8], body)
		}
	}
	if strings.Contains(body, `"lease_token":`) || strings.Contains(body, `\"lease_token\":`) {
		t.Errorf("%s: %s has a lease_token field: %.400s", who, what, body)
	}
}

// readers are the principals the walks run as: a reader of everything and
// the live task-scoped credential of a task that has had two leases.
func (st leakState) readers(t *testing.T, f *fixture) map[string]string {
	return map[string]string{
		"read on /":       f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead}),
		"task credential": st.agent,
	}
}

// TestNoAnswerShowsALeaseToken walks every route of the API (for every task
// of a ledger with live and revoked leases), the studio pages and the event
// stream, as a principal with read on / and as a task-scoped agent
// credential, and finds no lease token, no hash of one and no agent
// credential in any answer. (Only the claimer's own claim answer carries
// its tokens.)
func TestNoAnswerShowsALeaseToken(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newHubFixture(t, open)
		st := newLeakState(t, f)
		routes := f.api.Routes()
		for who, tok := range st.readers(t, f) {
			ok := 0
			for _, rt := range routes {
				method, pattern, _ := strings.Cut(rt.Pattern, " ")
				switch pattern {
				case "/v1/events":
					continue // a stream: below
				case "/v1/openapi.json":
					continue // the contract: it names the fields, it holds no values
				}
				ids := []string{""}
				switch {
				case strings.HasPrefix(pattern, "/v1/tasks/{task_id}"):
					ids = ids[:0]
					for _, id := range st.tasks {
						ids = append(ids, fmt.Sprint(id))
					}
				case strings.HasPrefix(pattern, "/v1/sweepers/"):
					ids = []string{sweeper.LeaseReaperID}
				case strings.Contains(pattern, "{process_kind}"):
				case strings.Contains(pattern, "{"):
					ids = []string{fmt.Sprint(st.tasks[0]), "x"}
				}
				for _, id := range ids {
					path := strings.NewReplacer("{task_id}", id, "{object_id}", id, "{id}", id, "{process_kind}", "critic").Replace(pattern)
					body := ""
					if method != http.MethodGet {
						body = "{}"
						if op, _ := ops.Lookup(rt.Operation); op != nil && cks.InputFields(op.InputType())["lease_token"] != nil {
							body = `{"lease_token":"not-the-lease"}` // a lease call needs one
						}
					}
					status, out := f.do(t, tok, method, path, body)
					if status == http.StatusOK {
						ok++
					}
					st.leaks(t, who, method+" "+path, out)
				}
			}
			extra := []string{"/v1/tasks?state=CLAIMED,RUNNING,REVIEWING", "/v1/tasks?state=STOPPED", "/v1/tasks?limit=1",
				"/", "/tasks", "/tasks?state=RUNNING", "/studio/processes", "/studio/sweepers"}
			for _, id := range st.tasks {
				extra = append(extra, fmt.Sprintf("/tasks/%d", id))
			}
			for _, p := range extra {
				status, out := f.do(t, tok, "GET", p, "")
				if status == http.StatusOK {
					ok++
				}
				st.leaks(t, who, "GET "+p, out)
			}
			st.leaks(t, who, "the event stream", f.readEvents(t, tok))
			if ok < 3 {
				t.Fatalf("%s: only %d answers were 200: the walk read nothing", who, ok)
			}
		}
		// The walk saw the tasks: the reader's view of the restarted task
		// names its executor and its aborted attempt.
		_, page := f.do(t, f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead}), "GET", fmt.Sprintf("/tasks/%d", st.restarted), "")
		if !strings.Contains(page, "w2") || !strings.Contains(page, "abort") {
			t.Fatalf("the studio's page of the restarted task shows neither its executor nor its abort: %.600s", page)
		}
	})
}

// readEvents opens /v1/events as token, publishes an event and returns what
// the stream sent up to and including it.
func (f *fixture) readEvents(t *testing.T, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b) //nolint:errcheck
		return b.String()
	}
	r := bufio.NewReader(resp.Body)
	var got strings.Builder
	line, err := r.ReadString('\n') // ": connected": the subscription is in place
	got.WriteString(line)
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	f.bus.Publish(events.Event{Type: events.ProcessesChanged, At: f.clock.Now()})
	for !strings.HasPrefix(line, "data:") {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("event stream after %q: %v", got.String(), err)
		}
		got.WriteString(line)
	}
	return got.String()
}

// bearer adds a bearer token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestNoMCPToolShowsALeaseToken calls every MCP tool (on every task of a
// ledger with live and revoked leases) over /mcp as a principal with read
// on / and as a task-scoped agent credential, and finds no lease token, no
// hash of one and no agent credential in any result.
func TestNoMCPToolShowsALeaseToken(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newHubFixture(t, open)
		st := newLeakState(t, f)
		argsOf := func(tool string, task int64) map[string]any {
			switch tool {
			case mcpserver.ToolListProcesses, mcpserver.ToolListAgents, mcpserver.ToolListTasks:
				return nil
			case mcpserver.ToolProcessStatus, mcpserver.ToolRequestProcessStop:
				return map[string]any{"process_kind": "critic"}
			case mcpserver.ToolAgentStatus, mcpserver.ToolStartAgent, mcpserver.ToolStopAgent:
				return map[string]any{"agent_id": sweeper.LeaseReaperID}
			case mcpserver.ToolCreateTask:
				return map[string]any{"type": "t", "parent_id": task}
			case mcpserver.ToolAnswerTask:
				return map[string]any{"task_id": task, "text": "yes"}
			case mcpserver.ToolStopTask:
				return map[string]any{"task_id": task, "reason": "walk"}
			case mcpserver.ToolSubmitResearch:
				return map[string]any{"question": "Why?"}
			case mcpserver.ToolGetObject:
				return map[string]any{"object_id": task}
			case mcpserver.ToolListSchedules:
				return nil
			case mcpserver.ToolCreateSchedule:
				return map[string]any{"name": "walk", "cron": "@hourly", "task": map[string]any{"type": "t"}}
			case mcpserver.ToolGetSchedule, mcpserver.ToolPauseSchedule, mcpserver.ToolResumeSchedule,
				mcpserver.ToolTriggerSchedule, mcpserver.ToolDeleteSchedule:
				return map[string]any{"name": "walk"}
			}
			return map[string]any{"task_id": task}
		}
		for who, tok := range st.readers(t, f) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "walk", Version: "v0"}, nil).Connect(ctx,
				// Every tool, not only those the reader may call: each
				// refusal is walked too.
				&mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp?tools=all", MaxRetries: -1,
					HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
			if err != nil {
				cancel()
				t.Fatalf("%s: connect: %v", who, err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != len(mcpserver.Access()) {
				t.Fatalf("%s: tools/list: %d tools, %v; want the %d of mcpserver.Access()", who, len(tools.Tools), err, len(mcpserver.Access()))
			}
			succeeded := 0
			for _, tool := range tools.Tools {
				for _, task := range st.tasks {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: argsOf(tool.Name, task)})
					if err != nil {
						t.Fatalf("%s: %s: %v", who, tool.Name, err)
					}
					if !res.IsError {
						succeeded++
					}
					b, _ := json.Marshal(res)
					st.leaks(t, who, fmt.Sprintf("%s on task %d", tool.Name, task), string(b))
				}
			}
			cs.Close()
			cancel()
			if succeeded == 0 {
				t.Fatalf("%s: no tool call succeeded: the walk read nothing", who)
			}
		}
	})
}

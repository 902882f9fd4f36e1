package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
)

// fakeLLM is an OpenAI-compatible chat completions endpoint
// (POST /v1/chat/completions) of the test's own: the one fake of these
// tests, the provider being outside the machine. It answers by the
// request's last message, the task's text:
//   - "busy: …": 429 with Retry-After: 1 the first time, then as any text;
//   - "busier: …": 429 with Retry-After: 3600, always;
//   - "slow: …": no answer until the caller hangs up;
//   - anything else: the answer "summary of: TEXT".
type fakeLLM struct {
	srv     *httptest.Server
	closing chan struct{} // closed at the test's end: a held answer ends

	mu    sync.Mutex
	calls map[string][]*llmCall // by text
}

// llmCall is one request the fake received.
type llmCall struct {
	at           time.Time
	auth, model  string
	system, text string
	status       int
	hungUp       chan struct{} // closed when the caller hung up a held answer
}

func newFakeLLM(t testing.TB) *fakeLLM {
	f := &fakeLLM{closing: make(chan struct{}), calls: map[string][]*llmCall{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.closing)
		f.srv.Close()
	})
	return f
}

// baseURL is the fake's OPENAI_BASE_URL.
func (f *fakeLLM) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) < 2 {
		http.Error(w, `{"error":{"message":"not a chat completion request"}}`, http.StatusBadRequest)
		return
	}
	c := &llmCall{at: time.Now(), auth: r.Header.Get("Authorization"), model: req.Model,
		system: req.Messages[0].Content, text: req.Messages[len(req.Messages)-1].Content, hungUp: make(chan struct{})}
	f.mu.Lock()
	before := len(f.calls[c.text])
	f.calls[c.text] = append(f.calls[c.text], c)
	f.mu.Unlock()
	switch {
	case strings.HasPrefix(c.text, "busy:") && before == 0, strings.HasPrefix(c.text, "busier:"):
		c.status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", map[bool]string{true: "1", false: "3600"}[strings.HasPrefix(c.text, "busy:")])
		http.Error(w, `{"error":{"message":"rate limited","type":"rate_limit_exceeded"}}`, c.status)
		return
	case strings.HasPrefix(c.text, "slow:"):
		select {
		case <-r.Context().Done():
			close(c.hungUp)
		case <-f.closing:
		}
		return
	}
	c.status = http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // the caller may have gone
		"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": "summary of: " + c.text}}},
	})
}

// callsOf returns the requests made for text so far.
func (f *fakeLLM) callsOf(text string) []*llmCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*llmCall(nil), f.calls[text]...)
}

// llmAgent starts an example LLM agent as a process: kind, working tasks of
// type typ on h with token, its provider f.
type llmAgent func(t *testing.T, h *hubProc, token string, f *fakeLLM, kind, typ string) *agentProc

// llmEnv is an agent's environment: the hub and the fake provider.
func llmEnv(h *hubProc, token string, f *fakeLLM) []string {
	return []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + token,
		"OPENAI_BASE_URL=" + f.baseURL(), "OPENAI_API_KEY=test-key", "OPENAI_MODEL=fake-model"}
}

// llmAgentArgs are the agent's flags in the tests: one task at a time, a
// lease of 6 s (heartbeats every 2 s, so a stop is seen within that), a
// wait of at most 5 s within an attempt.
func llmAgentArgs(kind, typ string) []string {
	return []string{"--type", typ, "--kind", kind, "--concurrency", "1", "--lease-s", "6", "--max-wait-s", "5"}
}

// TestPythonLLMAgent runs examples/python-llm-agent (the Python SDK, the
// standard library's HTTP client) as a process against a real hub on both
// backends, its provider a fake (testLLMAgent); mypy --strict checks it as
// it checks the SDK.
func TestPythonLLMAgent(t *testing.T) {
	py := python3(t)
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := filepath.Abs(filepath.Join("..", "..", "examples", "python-llm-agent"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mypy", func(t *testing.T) { checkTypes(t, agent, []string{"PYTHONPATH=" + sdk}, "agent.py") })
	testLLMAgent(t, func(t *testing.T, h *hubProc, token string, f *fakeLLM, kind, typ string) *agentProc {
		env := append(llmEnv(h, token, f), "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
		return startProc(t, env, py, append([]string{filepath.Join(agent, "agent.py")}, llmAgentArgs(kind, typ)...)...)
	})
}

// TestTypeScriptLLMAgent builds examples/typescript-llm-agent (tsc
// --strict, against the built SDK it installs from sdk/typescript, as a
// project of its own would) and runs it as a process against a real hub on
// both backends, its provider a fake (testLLMAgent).
func TestTypeScriptLLMAgent(t *testing.T) {
	sdk := npmSDK(t)
	agent, err := filepath.Abs(filepath.Join("..", "..", "examples", "typescript-llm-agent"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{sdk, agent} {
		runIn(t, dir, nil, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
		runIn(t, dir, nil, "npm", "run", "build")
	}
	testLLMAgent(t, func(t *testing.T, h *hubProc, token string, f *fakeLLM, kind, typ string) *agentProc {
		return startProc(t, llmEnv(h, token, f), "node", append([]string{filepath.Join(agent, "dist", "agent.js")}, llmAgentArgs(kind, typ)...)...)
	})
}

// testLLMAgent runs an example LLM agent, with a token of what a worker
// needs (read and append on /tasks, update on its /processes/KIND), against
// a real hub on both backends and a fake provider, and checks that: a task
// completes with the model's answer, the request naming the model and the
// key; a 429 is asked again after its Retry-After, within the attempt; a
// 429 whose Retry-After is past the agent's longest wait gives the task
// back (its attempt fails retryably; the next attempt, the last, fails the
// task), each attempt asking once; an operator's stop during a slow answer
// hangs up the request and the stop answers abort_confirmed. Then `cks
// process stop` ends the agent, status 0.
func testLLMAgent(t *testing.T, start llmAgent) {
	forBackends(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		h := startHub(t, "serve", "--database", db.url)
		api := client.New(h.url, h.token)
		f := newFakeLLM(t)
		kind, typ := uniqueName("llm-agent"), "summarize"
		token := newToken(t, h, kind,
			cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead},
			cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermAppend},
			cks.Grant{Resource: auth.ProcessResource(kind), Permission: auth.PermUpdate})
		agent := start(t, h, token, f, kind, typ)
		create := func(text string, maxAttempts int) int64 {
			t.Helper()
			task, _, err := api.CreateTask(ctx, cks.NewTask{Type: typ, Title: "summarize", MaxAttempts: maxAttempts,
				Payload: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))})
			if err != nil {
				t.Fatal(err)
			}
			return task.ID
		}
		stderr := func() string { return "agent's stderr:\n" + agent.stderr.String() }

		t.Run("answers", func(t *testing.T) {
			const text = "the quarterly report, at length"
			task := waitState(t, api, create(text, 0), cks.TaskCompleted)
			calls := f.callsOf(text)
			if task.Result != "summary of: "+text || len(calls) != 1 {
				t.Fatalf("result %q after %d calls, want the model's answer after one\n%s", task.Result, len(calls), stderr())
			}
			if c := calls[0]; c.auth != "Bearer test-key" || c.model != "fake-model" || c.system == "" {
				t.Fatalf("the request: auth %q, model %q, system prompt %q; want the key, the model and a prompt", c.auth, c.model, c.system)
			}
		})

		t.Run("429 asked again after Retry-After", func(t *testing.T) {
			const text = "busy: the board minutes"
			task := waitState(t, api, create(text, 0), cks.TaskCompleted)
			calls := f.callsOf(text)
			if task.Result != "summary of: "+text || task.Attempts != 1 || len(calls) != 2 || calls[0].status != http.StatusTooManyRequests {
				t.Fatalf("result %q, attempts %d, %d calls; want the answer in one attempt, after a 429 and one more call\n%s",
					task.Result, task.Attempts, len(calls), stderr())
			}
			if waited := calls[1].at.Sub(calls[0].at); waited < time.Second {
				t.Fatalf("asked again %v after the 429, want at least its Retry-After of 1 s", waited)
			}
		})

		t.Run("429 past the longest wait gives the task back", func(t *testing.T) {
			const text = "busier: the annual report"
			task := waitState(t, api, create(text, 2), cks.TaskFailed)
			givenBack := false
			for _, e := range task.Events {
				givenBack = givenBack || e.From == cks.TaskRunning && e.To == cks.TaskOpen && strings.Contains(e.Reason, "ProviderBusy")
			}
			if n := len(f.callsOf(text)); task.Attempts != 2 || n != 2 || !givenBack || !strings.Contains(task.LastError, "ProviderBusy") {
				t.Fatalf("attempts %d, %d calls, given back %v, last error %q; want two attempts of one call each, the first given back\n%s",
					task.Attempts, n, givenBack, task.LastError, stderr())
			}
		})

		t.Run("a stop hangs up a slow answer", func(t *testing.T) {
			const text = "slow: the long novel"
			id := create(text, 0)
			waitFor(t, "the agent to ask the model", func() bool { return len(f.callsOf(text)) == 1 })
			stop, err := api.StopTask(ctx, id, client.StopRequest{Reason: "operator stop", Deadline: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if stop.Task.State != cks.TaskStopped || stop.Abort == nil || stop.Abort.Outcome != cks.AbortConfirmed {
				t.Fatalf("stop: %s, abort %+v; want STOPPED, abort_confirmed\n%s", stop.Task.State, stop.Abort, stderr())
			}
			select {
			case <-f.callsOf(text)[0].hungUp:
			case <-time.After(30 * time.Second):
				t.Fatalf("the agent did not hang up the request to the model\n%s", stderr())
			}
		})

		if _, err := api.StopProcess(ctx, kind); err != nil {
			t.Fatal(err)
		}
		if code := agent.wait(t); code != 0 {
			t.Fatalf("the agent exited %d after cks process stop, want 0\n%s", code, stderr())
		}
		if row, err := api.ProcessStatus(ctx, kind); err != nil || row.Status != cks.ProcessStopped || row.ExitedAt.IsZero() {
			t.Fatalf("process row %+v (%v), want stopped with exited_at", row, err)
		}
	})
}

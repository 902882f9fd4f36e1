package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatServer is an httptest server speaking chat completions: each request
// is recorded and answered by the next queued reply (the last one repeats).
type chatServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []recorded
	replies  []reply
}

type recorded struct {
	path, auth string
	body       chatRequest
}

type reply struct {
	status  int
	header  map[string]string
	content string // the message content, wrapped in a chat-completions body
	raw     string // when set, the whole body instead
	hang    bool   // never answers (until the request is cancelled)
}

func newChatServer(t *testing.T, replies ...reply) *chatServer {
	s := &chatServer{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body chatRequest
	if err := json.Unmarshal(b, &body); err != nil {
		s.t.Errorf("request body is not JSON: %v: %s", err, b)
	}
	s.mu.Lock()
	s.requests = append(s.requests, recorded{path: r.URL.Path, auth: r.Header.Get("Authorization"), body: body})
	rep := s.replies[0]
	if len(s.replies) > 1 {
		s.replies = s.replies[1:]
	}
	s.mu.Unlock()
	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	status := rep.status
	if status == 0 {
		status = 200
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if rep.raw != "" {
		io.WriteString(w, rep.raw)
		return
	}
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.content}}},
		"usage": map[string]int{"prompt_tokens": 1, "completion_tokens": 1},
	})
	w.Write(out)
}

func (s *chatServer) recorded() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}

// newTestModel returns the provider against s with recorded, instant
// backoff sleeps.
func newTestModel(t *testing.T, s *chatServer, cfg OpenAIConfig) (*openAI, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = s.srv.URL + "/v1/"
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	m, err := newOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := m.(*openAI)
	var mu sync.Mutex
	waits := &[]time.Duration{}
	o.backoff = func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	o.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return systemSleep(ctx, time.Millisecond)
	}
	return o, waits
}

var testPassages = []Passage{
	{ID: "stopping-tasks.md#1", Source: "stopping-tasks.md", Heading: "Stopping a running task", Text: "An operator stops a running task with cks task stop."},
	{ID: "sweepers.md#2", Source: "sweepers.md", Heading: "Sweepers", Text: "A stored stop reaches every node within one interval."},
}

func checkRequest(t *testing.T, r recorded, wantInPrompt ...string) {
	t.Helper()
	if r.path != "/v1/chat/completions" {
		t.Errorf("path = %q", r.path)
	}
	if r.auth != "Bearer sk-test" {
		t.Errorf("Authorization = %q", r.auth)
	}
	if r.body.Model != "test-model" || r.body.Temperature != 0 || r.body.ResponseFormat["type"] != "json_object" {
		t.Errorf("request = %+v", r.body)
	}
	if len(r.body.Messages) != 2 || r.body.Messages[0].Role != "system" || r.body.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v", r.body.Messages)
	}
	if !strings.Contains(r.body.Messages[0].Content, "JSON") {
		t.Errorf("system prompt does not ask for JSON: %s", r.body.Messages[0].Content)
	}
	for _, w := range wantInPrompt {
		if !strings.Contains(r.body.Messages[1].Content, w) {
			t.Errorf("user prompt lacks %q:\n%s", w, r.body.Messages[1].Content)
		}
	}
}

func TestOpenAIHappyPath(t *testing.T) {
	ctx := context.Background()
	claims := []Claim{
		{Text: "An operator stops a running task with cks task stop.", Citations: []string{"stopping-tasks.md#1"}},
		{Text: "A stop reaches every node.", Citations: []string{"sweepers.md#2"}},
	}
	s := newChatServer(t,
		reply{content: `{"claims":[{"text":"An operator stops a running task with cks task stop.","citations":["stopping-tasks.md#1"],"confidence":0.9},{"text":"A stop reaches every node.","citations":["sweepers.md#2"]}],"notes":"extra fields are fine"}`},
		reply{content: "```json\n" + `{"verdicts":[{"claim":1,"accept":false,"reason":"off topic"},{"claim":0,"accept":true,"reason":"supported"}],"sufficient":true,"summary":"one claim is enough"}` + "\n```"},
		reply{content: `{"answer":"Run cks task stop [stopping-tasks.md#1].","citations":["stopping-tasks.md#1","stopping-tasks.md#1"]}`},
		reply{content: `{"valid":false,"rationale":"does not say what happens to the lease","send_back_to":"research"}`},
	)
	m, _ := newTestModel(t, s, OpenAIConfig{APIKey: "sk-test"})
	if m.Name() != "openai:test-model" {
		t.Fatal(m.Name())
	}
	q := "How does cks stop a running task?"

	r, err := m.Research(ctx, ResearchInput{Question: q, Passages: testPassages, Feedback: []string{"too vague last time"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claims) != 2 || r.Claims[0].Citations[0] != "stopping-tasks.md#1" || r.Claims[1].Text != "A stop reaches every node." {
		t.Fatalf("research = %+v", r)
	}

	c, err := m.Critique(ctx, CritiqueInput{Question: q, Claims: claims, Passages: testPassages})
	if err != nil {
		t.Fatal(err)
	}
	want := CritiqueOutput{Verdicts: []Verdict{{Claim: 0, Accept: true, Reason: "supported"}, {Claim: 1, Accept: false, Reason: "off topic"}},
		Sufficient: true, Summary: "one claim is enough"}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("critique = %+v, want %+v", c, want)
	}

	sy, err := m.Synthesize(ctx, SynthesisInput{Question: q, Claims: claims[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if sy.Answer != "Run cks task stop [stopping-tasks.md#1]." || len(sy.Citations) != 1 {
		t.Fatalf("synthesis = %+v", sy)
	}

	v, err := m.Validate(ctx, ValidationInput{Question: q, Answer: sy.Answer, Citations: sy.Citations, Claims: claims[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid || v.SendBackTo != BackToResearch || v.Rationale == "" {
		t.Fatalf("validation = %+v", v)
	}

	reqs := s.recorded()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	checkRequest(t, reqs[0], q, "[stopping-tasks.md#1] (Stopping a running task)", testPassages[0].Text, testPassages[1].Text, "too vague last time")
	checkRequest(t, reqs[1], q, "0. "+claims[0].Text, "1. "+claims[1].Text, testPassages[1].Text, "sweepers.md#2")
	checkRequest(t, reqs[2], q, claims[0].Text, "stopping-tasks.md#1")
	checkRequest(t, reqs[3], q, sy.Answer, claims[0].Text)
}

func TestOpenAINoAPIKey(t *testing.T) {
	s := newChatServer(t, reply{content: `{"valid":true,"rationale":"fine"}`})
	m, _ := newTestModel(t, s, OpenAIConfig{})
	v, err := m.Validate(context.Background(), ValidationInput{Question: "q", Answer: "a"})
	if err != nil || !v.Valid || v.SendBackTo != "" {
		t.Fatalf("validate = %+v, %v", v, err)
	}
	if a := s.recorded()[0].auth; a != "" {
		t.Fatalf("Authorization sent without a key: %q", a)
	}
}

func TestOpenAIRetriesRateLimit(t *testing.T) {
	s := newChatServer(t,
		reply{status: 429, header: map[string]string{"Retry-After": "7"}, raw: `{"error":{"message":"slow down"}}`},
		reply{status: 503, raw: `upstream busy`},
		reply{content: `{"claims":[]}`},
	)
	m, waits := newTestModel(t, s, OpenAIConfig{APIKey: "sk-test"})
	out, err := m.Research(context.Background(), ResearchInput{Question: "q", Passages: testPassages})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Claims) != 0 || len(s.recorded()) != 3 {
		t.Fatalf("claims %+v after %d requests", out, len(s.recorded()))
	}
	// Retry-After honoured on the 429; backoff (attempt 2 → 2 ms here) on the 503.
	if len(*waits) != 2 || (*waits)[0] != 7*time.Second || (*waits)[1] != 2*time.Millisecond {
		t.Fatalf("waits = %v, want [7s 2ms]", *waits)
	}
}

func TestOpenAIUnavailableAfterAttempts(t *testing.T) {
	s := newChatServer(t, reply{status: 500, raw: `{"error":{"message":"internal"}}`})
	m, waits := newTestModel(t, s, OpenAIConfig{MaxAttempts: 3})
	_, err := m.Synthesize(context.Background(), SynthesisInput{Question: "q"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "internal") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("err = %v", err)
	}
	if n := len(s.recorded()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if len(*waits) != 2 {
		t.Fatalf("waits = %v", *waits)
	}
}

func TestOpenAINetworkErrorUnavailable(t *testing.T) {
	s := newChatServer(t, reply{})
	m, _ := newTestModel(t, s, OpenAIConfig{MaxAttempts: 2})
	s.srv.Close()
	_, err := m.Validate(context.Background(), ValidationInput{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestOpenAIAttemptTimeoutRetried(t *testing.T) {
	s := newChatServer(t, reply{hang: true}, reply{content: `{"valid":true,"rationale":"ok"}`})
	m, _ := newTestModel(t, s, OpenAIConfig{Timeout: 50 * time.Millisecond})
	v, err := m.Validate(context.Background(), ValidationInput{})
	if err != nil || !v.Valid {
		t.Fatalf("validate = %+v, %v", v, err)
	}
}

func TestOpenAIClientErrorNotRetried(t *testing.T) {
	s := newChatServer(t, reply{status: 400, raw: `{"error":{"message":"response_format is not supported by this model","type":"invalid_request_error"}}`})
	m, _ := newTestModel(t, s, OpenAIConfig{})
	_, err := m.Critique(context.Background(), CritiqueInput{Question: "q"})
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	var re *ReplyError
	if errors.As(err, &re) {
		t.Fatalf("a refusal is not a ReplyError: %v", err)
	}
	if !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "response_format is not supported") {
		t.Fatalf("err does not say what the server said: %v", err)
	}
	if n := len(s.recorded()); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry)", n)
	}
}

func TestOpenAIBadReplies(t *testing.T) {
	ctx := context.Background()
	claims := []Claim{{Text: "c0", Citations: []string{"stopping-tasks.md#1"}}, {Text: "c1", Citations: []string{"sweepers.md#2"}}}
	research := func(m *openAI) error {
		_, err := m.Research(ctx, ResearchInput{Question: "q", Passages: testPassages})
		return err
	}
	critique := func(m *openAI) error {
		_, err := m.Critique(ctx, CritiqueInput{Question: "q", Claims: claims, Passages: testPassages})
		return err
	}
	synthesize := func(m *openAI) error {
		_, err := m.Synthesize(ctx, SynthesisInput{Question: "q", Claims: claims[:1]})
		return err
	}
	validate := func(m *openAI) error {
		_, err := m.Validate(ctx, ValidationInput{Question: "q"})
		return err
	}
	for _, tc := range []struct {
		name    string
		call    func(*openAI) error
		content string
		want    string
	}{
		{"not JSON", research, `Sure! Here are the claims: the task stops.`, "not the JSON object"},
		{"truncated JSON", research, `{"claims":[{"text":"a"`, "not the JSON object"},
		{"wrong type", research, `{"claims":"none"}`, "not the JSON object"},
		{"missing claims", research, `{"result":[]}`, `missing field "claims"`},
		{"claim without citations field", research, `{"claims":[{"text":"a"}]}`, `missing field "citations"`},
		{"claim without text", research, `{"claims":[{"citations":["sweepers.md#2"]}]}`, `missing field "text"`},
		{"claim with no citation", research, `{"claims":[{"text":"a","citations":[]}]}`, "no citations"},
		{"citation not among passages", research, `{"claims":[{"text":"a","citations":["made-up.md#4"]}]}`, `"made-up.md#4"`},
		{"missing verdicts", critique, `{"sufficient":true}`, `missing field "verdicts"`},
		{"missing sufficient", critique, `{"verdicts":[{"claim":0,"accept":true,"reason":"r"},{"claim":1,"accept":true,"reason":"r"}]}`, `missing field "sufficient"`},
		{"verdict out of range", critique, `{"verdicts":[{"claim":0,"accept":true,"reason":"r"},{"claim":2,"accept":true,"reason":"r"}],"sufficient":true}`, "out of range"},
		{"verdict missing accept", critique, `{"verdicts":[{"claim":0,"reason":"r"},{"claim":1,"accept":true,"reason":"r"}],"sufficient":true}`, `missing field "accept"`},
		{"duplicate verdict", critique, `{"verdicts":[{"claim":0,"accept":true,"reason":"r"},{"claim":0,"accept":true,"reason":"r"}],"sufficient":true}`, "second verdict"},
		{"verdict missing", critique, `{"verdicts":[{"claim":0,"accept":true,"reason":"r"}],"sufficient":true}`, "no verdict on claim 1"},
		{"sufficient without accepts", critique, `{"verdicts":[{"claim":0,"accept":false,"reason":"r"},{"claim":1,"accept":false,"reason":"r"}],"sufficient":true}`, "no claim is accepted"},
		{"missing answer", synthesize, `{"citations":["stopping-tasks.md#1"]}`, `missing field "answer"`},
		{"missing answer citations", synthesize, `{"answer":"x"}`, `missing field "citations"`},
		{"answer cites a foreign passage", synthesize, `{"answer":"x","citations":["sweepers.md#2"]}`, "none of the claims cites"},
		{"missing valid", validate, `{"rationale":"r"}`, `missing field "valid"`},
		{"missing rationale", validate, `{"valid":true}`, `missing field "rationale"`},
		{"invalid without send_back_to", validate, `{"valid":false,"rationale":"r"}`, "send_back_to"},
		{"bad send_back_to", validate, `{"valid":false,"rationale":"r","send_back_to":"critique"}`, `"critique"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newChatServer(t, reply{content: tc.content})
			m, _ := newTestModel(t, s, OpenAIConfig{})
			err := tc.call(m)
			var re *ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *ReplyError", err)
			}
			if re.Raw != tc.content {
				t.Fatalf("Raw = %q, want the message content %q", re.Raw, tc.content)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if n := len(s.recorded()); n != 1 {
				t.Fatalf("%d requests: an unusable reply is not retried by the provider", n)
			}
		})
	}

	// A body that is not a chat completion at all keeps the body as Raw.
	s := newChatServer(t, reply{raw: `<html>proxy error</html>`})
	m, _ := newTestModel(t, s, OpenAIConfig{})
	var re *ReplyError
	if err := validate(m); !errors.As(err, &re) || re.Raw != `<html>proxy error</html>` {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIContextCancelledMidRetry(t *testing.T) {
	s := newChatServer(t, reply{status: 503, raw: `busy`})
	m, err := newOpenAI(OpenAIConfig{BaseURL: s.srv.URL, Model: "test-model", MaxAttempts: 10})
	if err != nil {
		t.Fatal(err)
	}
	m.(*openAI).backoff = func(int) time.Duration { return time.Hour } // the real sleep, a long wait
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.recorded()) == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err = m.Research(ctx, ResearchInput{Question: "q"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v after cancel", d)
	}

	// And during a hanging request.
	s2 := newChatServer(t, reply{hang: true})
	m2, _ := newOpenAI(OpenAIConfig{BaseURL: s2.srv.URL, Model: "m"})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	start = time.Now()
	if _, err := m2.Validate(ctx2, ValidationInput{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestNewOpenAIConfig(t *testing.T) {
	if _, err := newOpenAI(OpenAIConfig{}); err == nil || !strings.Contains(err.Error(), "model") {
		t.Fatalf("no model: %v", err)
	}
	if _, err := newOpenAI(OpenAIConfig{Model: "m", BaseURL: "ftp://x"}); err == nil {
		t.Fatal("ftp base URL accepted")
	}
	if _, err := newOpenAI(OpenAIConfig{Model: "m", Timeout: -1}); err == nil {
		t.Fatal("negative timeout accepted")
	}
	m, err := newOpenAI(OpenAIConfig{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	o := m.(*openAI)
	if o.cfg.BaseURL != DefaultOpenAIBaseURL || o.cfg.Timeout != DefaultOpenAITimeout || o.cfg.MaxAttempts != DefaultOpenAIMaxAttempts || o.cfg.HTTPClient == nil {
		t.Fatalf("defaults = %+v", o.cfg)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-1":                            0,
		"junk":                          0,
		"100000":                        maxRetryAfter,
		"Thu, 01 Jan 2026 00:00:10 GMT": 10 * time.Second,
	} {
		if got := parseRetryAfter(h, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
	for n := 1; n <= 10; n++ {
		if d := jitteredBackoff(n); d < 0 || d > backoffMax {
			t.Fatalf("backoff(%d) = %v", n, d)
		}
	}
}

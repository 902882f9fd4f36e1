package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cannedReply is an http.RoundTripper answering every request with one
// reply, so a fuzz input costs no network round trip.
type cannedReply struct {
	status     int
	retryAfter string
	body       []byte
}

func (c cannedReply) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if c.retryAfter != "" {
		h.Set("Retry-After", c.retryAfter)
	}
	return &http.Response{StatusCode: c.status, Status: fmt.Sprintf("%d %s", c.status, http.StatusText(c.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: r}, nil
}

// fuzzModel is the OpenAI provider answered by reply, trying once.
func fuzzModel(t *testing.T, reply cannedReply) *openAI {
	t.Helper()
	m, err := newOpenAI(OpenAIConfig{BaseURL: "http://model.test/v1", Model: "fuzz", MaxAttempts: 1,
		HTTPClient: &http.Client{Transport: reply}})
	if err != nil {
		t.Fatal(err)
	}
	o := m.(*openAI)
	o.sleep = func(context.Context, time.Duration) error { return errors.New("fuzz: no retries") }
	return o
}

var fuzzClaims = []Claim{
	{Text: "stop holds a task", Citations: []string{testPassages[0].ID}},
	{Text: "stops reach every node", Citations: []string{testPassages[1].ID}},
}

// askStep asks the step step%4 of m and checks that an answer it returns is
// one the pipeline may use: citations among those given, one verdict per
// claim, a known stage to send back to, and no empty text.
func askStep(t *testing.T, m *openAI, step byte) error {
	t.Helper()
	ctx := context.Background()
	switch step % 4 {
	case 0:
		out, err := m.Research(ctx, ResearchInput{Question: "q", Passages: testPassages})
		if err != nil {
			return err
		}
		given := passageIDs(testPassages)
		for i, c := range out.Claims {
			if strings.TrimSpace(c.Text) == "" || len(c.Citations) == 0 {
				t.Fatalf("research: claim %d %+v has no text or no citations", i, c)
			}
			for _, id := range c.Citations {
				if !given[id] {
					t.Fatalf("research: claim %d cites %q, not a given passage", i, id)
				}
			}
		}
	case 1:
		out, err := m.Critique(ctx, CritiqueInput{Question: "q", Claims: fuzzClaims, Passages: testPassages})
		if err != nil {
			return err
		}
		accepted := 0
		if len(out.Verdicts) != len(fuzzClaims) {
			t.Fatalf("critique: %d verdicts for %d claims", len(out.Verdicts), len(fuzzClaims))
		}
		for i, v := range out.Verdicts {
			if v.Claim != i {
				t.Fatalf("critique: verdict %d is on claim %d", i, v.Claim)
			}
			if v.Accept {
				accepted++
			}
		}
		if out.Sufficient && accepted == 0 {
			t.Fatalf("critique: sufficient with no claim accepted")
		}
	case 2:
		out, err := m.Synthesize(ctx, SynthesisInput{Question: "q", Claims: fuzzClaims})
		if err != nil {
			return err
		}
		if strings.TrimSpace(out.Answer) == "" {
			t.Fatalf("synthesize: empty answer")
		}
		for i, id := range out.Citations {
			if !slices.ContainsFunc(fuzzClaims, func(c Claim) bool { return slices.Contains(c.Citations, id) }) ||
				slices.Contains(out.Citations[:i], id) {
				t.Fatalf("synthesize: citation %q is not a claim's, or repeated: %v", id, out.Citations)
			}
		}
	case 3:
		out, err := m.Validate(ctx, ValidationInput{Question: "q", Answer: "a", Citations: fuzzClaims[0].Citations, Claims: fuzzClaims})
		if err != nil {
			return err
		}
		if out.Valid != (out.SendBackTo == "") || (!out.Valid && out.SendBackTo != BackToResearch && out.SendBackTo != BackToSynthesis) {
			t.Fatalf("validate: valid %t with send_back_to %q", out.Valid, out.SendBackTo)
		}
	}
	return nil
}

// FuzzOpenAIResponse answers a step with an arbitrary status, Retry-After
// and body: never a panic; a 2xx that is not a usable reply is a
// *ReplyError; 429 and 5xx are ErrUnavailable once the attempts are spent;
// any other status is an error of neither kind.
func FuzzOpenAIResponse(f *testing.F) {
	ok := `{"choices":[{"message":{"content":"{\"valid\":true,\"rationale\":\"r\"}"}}]}`
	for _, s := range []struct {
		status uint16
		ra     string
		body   string
	}{{200, "", ok}, {200, "", `{"choices":[]}`}, {200, "", `{"choices":[{"message":{"content":null}}]}`}, {200, "", ``},
		{200, "", `null`}, {200, "", `{"choices":[{"message":{"content":"x"}}]} trailing`}, {201, "", `[`},
		{429, "1e10", `{"error":{"message":"slow down"}}`}, {503, "Thu, 01 Jan 2026 00:00:10 GMT", `{"error":"down"}`},
		{400, "", `{"error":{"message":"bad model"}}`}, {302, "", ``}, {404, "", strings.Repeat("x", 600)}} {
		f.Add(byte(3), s.status, s.ra, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, step byte, status uint16, retryAfter string, body []byte) {
		code := 100 + int(status)%500
		err := askStep(t, fuzzModel(t, cannedReply{status: code, retryAfter: retryAfter, body: body}), step)
		var re *ReplyError
		switch {
		case code >= 200 && code <= 299:
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("status %d, body %q: error %v (%T), want a *ReplyError", code, body, err, err)
			}
		case code == http.StatusTooManyRequests || code >= 500:
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("status %d: error %v, want ErrUnavailable", code, err)
			}
		default:
			if err == nil || errors.As(err, &re) || errors.Is(err, ErrUnavailable) {
				t.Fatalf("status %d: error %v, want a refusal", code, err)
			}
		}
	})
}

// FuzzOpenAIReply answers a step with arbitrary message content in a
// well-formed chat-completions response: the step returns a usable answer
// (askStep checks it) or a *ReplyError carrying the content as received.
func FuzzOpenAIReply(f *testing.F) {
	for i, s := range []string{
		`{"claims":[{"text":"t","citations":["stopping-tasks.md#1"]}]}`,
		`{"verdicts":[{"claim":0,"accept":true,"reason":"r"},{"claim":1,"accept":false,"reason":"r"}],"sufficient":true}`,
		`{"answer":"a","citations":["sweepers.md#2","sweepers.md#2"]}`,
		`{"valid":false,"rationale":"r","send_back_to":"synthesis"}`,
		"```json\n{\"claims\":[]}\n```", `{"claims":[{"text":" ","citations":["x"]}]}`,
		`{"verdicts":[{"claim":-1,"accept":true,"reason":"r"}],"sufficient":false}`,
		`{"verdicts":[{"claim":9223372036854775808,"accept":true,"reason":"r"}],"sufficient":false}`,
		`{"answer":"a","citations":["nowhere"]}`, `{"valid":false,"rationale":"r","send_back_to":"elsewhere"}`,
		`null`, ``, "```", `{"valid":true,"rationale":"r"} {}`,
	} {
		f.Add(byte(i), s)
	}
	f.Fuzz(func(t *testing.T, step byte, content string) {
		body, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
		if err != nil {
			t.Fatal(err)
		}
		var sent chatResponse // the content as the model sent it (valid UTF-8)
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		err = askStep(t, fuzzModel(t, cannedReply{status: http.StatusOK, body: body}), step)
		var re *ReplyError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("content %q: error %v (%T), want a *ReplyError", content, err, err)
		}
		if re != nil && re.Raw != *sent.Choices[0].Message.Content {
			t.Fatalf("content %q: the ReplyError carries %q, not the content", content, re.Raw)
		}
	})
}

// FuzzParseRetryAfter: the wait read from a Retry-After header is never
// negative nor above the cap, and for a number of seconds it is that many
// seconds, cut to the cap (however large the number).
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "3", "0.5", "-1", "junk", "100000", "1e10", "1e400", "Inf", "NaN", "-Inf", "0x10",
		"Thu, 01 Jan 2026 00:00:10 GMT", "Wed, 31 Dec 2025 00:00:00 GMT", " 7 "} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h string) {
		got := parseRetryAfter(h, now)
		if got < 0 || got > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v, outside 0..%v", h, got, maxRetryAfter)
		}
		secs, err := strconv.ParseFloat(strings.TrimSpace(h), 64)
		if err != nil {
			return
		}
		var want time.Duration
		switch {
		case math.IsNaN(secs) || secs <= 0:
		case secs >= maxRetryAfter.Seconds():
			want = maxRetryAfter
		default:
			want = time.Duration(secs * float64(time.Second))
		}
		if got != want {
			t.Fatalf("parseRetryAfter(%q) = %v, want %v", h, got, want)
		}
	})
}

package llm

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
)

// Defaults of OpenAIConfig.
const (
	DefaultOpenAIBaseURL     = config.DefaultLLMBaseURL
	DefaultOpenAITimeout     = config.DefaultLLMTimeout
	DefaultOpenAIMaxAttempts = 4
)

const (
	backoffBase    = 500 * time.Millisecond
	backoffMax     = 15 * time.Second
	maxRetryAfter  = 2 * time.Minute // a longer Retry-After is cut to this
	maxReplyBytes  = 8 << 20
	maxErrorDetail = 512
)

// OpenAIConfig configures newOpenAI.
type OpenAIConfig struct {
	// BaseURL is the API root the chat-completions path is appended to;
	// empty means DefaultOpenAIBaseURL. Local servers speaking the
	// protocol (llama.cpp, vLLM, Ollama, …) are usually
	// "http://127.0.0.1:PORT/v1".
	BaseURL string
	// Model is the model name sent with every request (required).
	Model string
	// APIKey is sent as "Authorization: Bearer APIKey" when not empty.
	APIKey string
	// Timeout bounds each HTTP attempt; 0 means DefaultOpenAITimeout.
	Timeout time.Duration
	// MaxAttempts is how many times a call is tried on 429, 5xx and
	// network errors; 0 means DefaultOpenAIMaxAttempts.
	MaxAttempts int
	// HTTPClient is used for the requests; nil means a fresh http.Client.
	HTTPClient *http.Client
}

//go:embed prompts/*.tmpl
var promptFS embed.FS

// prompts holds, per step S (research, critique, synthesize, validate), the
// templates "S.system" and "S.user", executed with the step's input.
var prompts = template.Must(template.New("prompts").ParseFS(promptFS, "prompts/*.tmpl"))

// newOpenAI returns a Model speaking the OpenAI chat-completions protocol:
// each method is one POST {BaseURL}/chat/completions with a system and a
// user message (from the embedded templates in prompts/), temperature 0
// and response_format {"type":"json_object"}. The reply's message content
// must be JSON of the method's output shape; it is parsed leniently about
// extra fields and strictly about required ones and validated against the
// input (citations among the given ids, one verdict per claim, …);
// anything else is a *ReplyError carrying the content.
//
// 429, 5xx and network errors (including an attempt's timeout) are retried
// with exponential backoff and full jitter (0.5 s doubling, at most 15 s),
// or after the server's Retry-After (at most 2 min) when it sends one; once
// MaxAttempts are spent the error wraps ErrUnavailable. Any other 4xx is
// returned at once with what the server said. A done ctx ends the call
// promptly, between or during attempts.
func newOpenAI(cfg OpenAIConfig) (Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: a model name is required")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	if err := config.CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("openai: timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultOpenAITimeout
	}
	if cfg.MaxAttempts < 0 {
		return nil, fmt.Errorf("openai: max attempts %d is negative", cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultOpenAIMaxAttempts
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	cfg.BaseURL = strings.TrimRight(base, "/")
	return &openAI{cfg: cfg, backoff: jitteredBackoff, sleep: systemSleep}, nil
}

type openAI struct {
	cfg OpenAIConfig
	// backoff is the wait before attempt n+1 after failed attempt n (from 1)
	// when the server gives no Retry-After; sleep waits or returns ctx's
	// error. Tests replace both.
	backoff func(n int) time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
}

func (m *openAI) Name() string { return "openai:" + m.cfg.Model }

func jitteredBackoff(n int) time.Duration {
	d := backoffBase << (n - 1)
	if d > backoffMax || d <= 0 {
		d = backoffMax
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// systemSleep is the retry wait: clock.Sleep on the system clock.
func systemSleep(ctx context.Context, d time.Duration) error {
	return clock.Sleep(ctx, clock.System{}, d, nil)
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []chatMessage     `json:"messages"`
	Temperature    float64           `json:"temperature"`
	ResponseFormat map[string]string `json:"response_format"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// retryable is a failed attempt worth another one.
type retryable struct {
	err        error
	retryAfter time.Duration // from the server, 0 when it gave none
}

func (r *retryable) Error() string { return r.err.Error() }

// complete renders the step's prompts, sends them and returns the reply's
// message content.
func (m *openAI) complete(ctx context.Context, step string, data any) (string, error) {
	var sys, user bytes.Buffer
	if err := prompts.ExecuteTemplate(&sys, step+".system", data); err != nil {
		return "", fmt.Errorf("openai: prompt %s.system: %w", step, err)
	}
	if err := prompts.ExecuteTemplate(&user, step+".user", data); err != nil {
		return "", fmt.Errorf("openai: prompt %s.user: %w", step, err)
	}
	body, err := json.Marshal(chatRequest{
		Model: m.cfg.Model,
		Messages: []chatMessage{
			{Role: "system", Content: sys.String()},
			{Role: "user", Content: user.String()},
		},
		Temperature:    0,
		ResponseFormat: map[string]string{"type": "json_object"},
	})
	if err != nil {
		return "", err
	}
	endpoint := m.cfg.BaseURL + "/chat/completions"
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("openai %s: %w", step, err)
		}
		content, err := m.attempt(ctx, endpoint, body)
		if err == nil {
			return content, nil
		}
		var r *retryable
		if !errors.As(err, &r) {
			return "", fmt.Errorf("openai %s: %w", step, err)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("openai %s: %w", step, ctx.Err())
		}
		last = r.err
		if n >= m.cfg.MaxAttempts {
			break
		}
		wait := r.retryAfter
		if wait <= 0 {
			wait = m.backoff(n)
		}
		if err := m.sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("openai %s: %w (while waiting to retry after: %v)", step, err, last)
		}
	}
	return "", fmt.Errorf("openai %s: %w: %d attempts failed, the last with: %v", step, ErrUnavailable, m.cfg.MaxAttempts, last)
}

// attempt is one HTTP exchange. Its errors are *retryable, *ReplyError or
// a plain error (a refusal worth no retry).
func (m *openAI) attempt(ctx context.Context, endpoint string, body []byte) (string, error) {
	actx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	resp, err := m.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", &retryable{err: fmt.Errorf("POST %s: %w", endpoint, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return "", &retryable{err: fmt.Errorf("POST %s: reading the reply: %w", endpoint, err)}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return "", &retryable{
			err:        fmt.Errorf("POST %s: %s: %s", endpoint, resp.Status, errorDetail(raw)),
			retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return "", fmt.Errorf("POST %s: the server refused the request: %s: %s", endpoint, resp.Status, errorDetail(raw))
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return "", &ReplyError{Raw: string(raw), Err: fmt.Errorf("not a chat-completions response: %w", err)}
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == nil {
		return "", &ReplyError{Raw: string(raw), Err: errors.New("chat-completions response without choices[0].message.content")}
	}
	return *cr.Choices[0].Message.Content, nil
}

// errorDetail is what the server said: the "error.message" of an
// OpenAI-style error body, else the start of the body.
func errorDetail(raw []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > maxErrorDetail {
		s = s[:maxErrorDetail] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date);
// 0 when absent or unreadable.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(h, 64); err == nil {
		switch {
		case !(secs > 0): // also NaN
			return 0
		case secs >= maxRetryAfter.Seconds():
			// Before converting: a number of seconds too large for a
			// Duration would overflow (on amd64 to a negative wait, read as
			// no Retry-After at all).
			return maxRetryAfter
		}
		d = time.Duration(secs * float64(time.Second))
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// decodeReply unmarshals the content (tolerating a Markdown code fence
// around it, which some local models add) into v.
func decodeReply(content string, v any) error {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimPrefix(s, "json")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("not the JSON object asked for: %w", err)
	}
	return nil
}

func replyErr(content string, format string, args ...any) error {
	return &ReplyError{Raw: content, Err: fmt.Errorf(format, args...)}
}

func (m *openAI) Research(ctx context.Context, in ResearchInput) (ResearchOutput, error) {
	content, err := m.complete(ctx, "research", in)
	if err != nil {
		return ResearchOutput{}, err
	}
	var r struct {
		Claims *[]struct {
			Text      *string   `json:"text"`
			Citations *[]string `json:"citations"`
		} `json:"claims"`
	}
	if err := decodeReply(content, &r); err != nil {
		return ResearchOutput{}, &ReplyError{Raw: content, Err: err}
	}
	if r.Claims == nil {
		return ResearchOutput{}, replyErr(content, `missing field "claims"`)
	}
	given := passageIDs(in.Passages)
	out := ResearchOutput{Claims: []Claim{}}
	for i, c := range *r.Claims {
		switch {
		case c.Text == nil:
			return ResearchOutput{}, replyErr(content, `claims[%d]: missing field "text"`, i)
		case strings.TrimSpace(*c.Text) == "":
			return ResearchOutput{}, replyErr(content, `claims[%d]: empty "text"`, i)
		case c.Citations == nil:
			return ResearchOutput{}, replyErr(content, `claims[%d]: missing field "citations"`, i)
		case len(*c.Citations) == 0:
			return ResearchOutput{}, replyErr(content, `claims[%d]: no citations`, i)
		}
		for _, id := range *c.Citations {
			if !given[id] {
				return ResearchOutput{}, replyErr(content, "claims[%d]: cites %q, which is not one of the given passages", i, id)
			}
		}
		out.Claims = append(out.Claims, Claim{Text: strings.TrimSpace(*c.Text), Citations: *c.Citations})
	}
	return out, nil
}

func (m *openAI) Critique(ctx context.Context, in CritiqueInput) (CritiqueOutput, error) {
	content, err := m.complete(ctx, "critique", in)
	if err != nil {
		return CritiqueOutput{}, err
	}
	var r struct {
		Verdicts *[]struct {
			Claim  *int    `json:"claim"`
			Accept *bool   `json:"accept"`
			Reason *string `json:"reason"`
		} `json:"verdicts"`
		Sufficient *bool   `json:"sufficient"`
		Summary    *string `json:"summary"`
	}
	if err := decodeReply(content, &r); err != nil {
		return CritiqueOutput{}, &ReplyError{Raw: content, Err: err}
	}
	if r.Verdicts == nil {
		return CritiqueOutput{}, replyErr(content, `missing field "verdicts"`)
	}
	if r.Sufficient == nil {
		return CritiqueOutput{}, replyErr(content, `missing field "sufficient"`)
	}
	out := CritiqueOutput{Verdicts: make([]Verdict, len(in.Claims)), Sufficient: *r.Sufficient}
	if r.Summary != nil {
		out.Summary = *r.Summary
	}
	seen := make([]bool, len(in.Claims))
	accepted := 0
	for i, v := range *r.Verdicts {
		switch {
		case v.Claim == nil:
			return CritiqueOutput{}, replyErr(content, `verdicts[%d]: missing field "claim"`, i)
		case v.Accept == nil:
			return CritiqueOutput{}, replyErr(content, `verdicts[%d]: missing field "accept"`, i)
		case v.Reason == nil:
			return CritiqueOutput{}, replyErr(content, `verdicts[%d]: missing field "reason"`, i)
		case *v.Claim < 0 || *v.Claim >= len(in.Claims):
			return CritiqueOutput{}, replyErr(content, "verdicts[%d]: claim %d out of range (there are %d claims)", i, *v.Claim, len(in.Claims))
		case seen[*v.Claim]:
			return CritiqueOutput{}, replyErr(content, "verdicts[%d]: a second verdict on claim %d", i, *v.Claim)
		}
		seen[*v.Claim] = true
		if *v.Accept {
			accepted++
		}
		out.Verdicts[*v.Claim] = Verdict{Claim: *v.Claim, Accept: *v.Accept, Reason: *v.Reason}
	}
	for i, ok := range seen {
		if !ok {
			return CritiqueOutput{}, replyErr(content, "no verdict on claim %d", i)
		}
	}
	if out.Sufficient && accepted == 0 {
		return CritiqueOutput{}, replyErr(content, "sufficient is true but no claim is accepted")
	}
	return out, nil
}

func (m *openAI) Synthesize(ctx context.Context, in SynthesisInput) (SynthesisOutput, error) {
	content, err := m.complete(ctx, "synthesize", in)
	if err != nil {
		return SynthesisOutput{}, err
	}
	var r struct {
		Answer    *string   `json:"answer"`
		Citations *[]string `json:"citations"`
	}
	if err := decodeReply(content, &r); err != nil {
		return SynthesisOutput{}, &ReplyError{Raw: content, Err: err}
	}
	switch {
	case r.Answer == nil:
		return SynthesisOutput{}, replyErr(content, `missing field "answer"`)
	case strings.TrimSpace(*r.Answer) == "":
		return SynthesisOutput{}, replyErr(content, `empty "answer"`)
	case r.Citations == nil:
		return SynthesisOutput{}, replyErr(content, `missing field "citations"`)
	}
	given := map[string]bool{}
	for _, c := range in.Claims {
		for _, id := range c.Citations {
			given[id] = true
		}
	}
	out := SynthesisOutput{Answer: strings.TrimSpace(*r.Answer), Citations: []string{}}
	seen := map[string]bool{}
	for _, id := range *r.Citations {
		if !given[id] {
			return SynthesisOutput{}, replyErr(content, "cites %q, which none of the claims cites", id)
		}
		if !seen[id] {
			seen[id] = true
			out.Citations = append(out.Citations, id)
		}
	}
	return out, nil
}

func (m *openAI) Validate(ctx context.Context, in ValidationInput) (ValidationOutput, error) {
	content, err := m.complete(ctx, "validate", in)
	if err != nil {
		return ValidationOutput{}, err
	}
	var r struct {
		Valid      *bool   `json:"valid"`
		Rationale  *string `json:"rationale"`
		SendBackTo *string `json:"send_back_to"`
	}
	if err := decodeReply(content, &r); err != nil {
		return ValidationOutput{}, &ReplyError{Raw: content, Err: err}
	}
	switch {
	case r.Valid == nil:
		return ValidationOutput{}, replyErr(content, `missing field "valid"`)
	case r.Rationale == nil:
		return ValidationOutput{}, replyErr(content, `missing field "rationale"`)
	}
	out := ValidationOutput{Valid: *r.Valid, Rationale: *r.Rationale}
	if !out.Valid {
		if r.SendBackTo == nil {
			return ValidationOutput{}, replyErr(content, `invalid without field "send_back_to"`)
		}
		switch *r.SendBackTo {
		case BackToResearch, BackToSynthesis:
			out.SendBackTo = *r.SendBackTo
		default:
			return ValidationOutput{}, replyErr(content, "send_back_to %q is neither %q nor %q", *r.SendBackTo, BackToResearch, BackToSynthesis)
		}
	}
	return out, nil
}

func passageIDs(ps []Passage) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p.ID] = true
	}
	return m
}

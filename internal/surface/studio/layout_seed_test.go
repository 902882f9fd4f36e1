package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// layoutSeed is what seedLayout made on a hub: the pages that once grew
// too wide or too tall.
type layoutSeed struct {
	LongTask int64 // a task with a 1,000-byte title and a 20 KB payload
	Question int64 // a question the pipeline answered, with citations
	Claim    int64 // a claim with long unbroken text, claimed by a worker with a long name
	Forked   int64 // an object forked and merged, with a rationale
}

// longWord is an unbroken run of n letters (a URL, a hash, a path).
func longWord(n int) string { return strings.Repeat("x", n) }

// open is a second handle on h's database, as an agent process has its
// own; closed when t ends.
func (h consoleHub) open(t testing.TB) *backend.Backend {
	t.Helper()
	b, err := backend.Open(context.Background(), h.Database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// emulate runs the DevTools command cmd with params on the tab: an
// emulation (a time zone, a colour scheme) its pages then run under.
func emulate[P any](tb *tab, cmd cdp.Command[P, cdp.Empty], params P) {
	tb.t.Helper()
	tb.do(func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, cmd, params)
		return chromedp.Void{}, err
	})
}

// seedLayout makes, through the API and a second handle on h's database
// (as an agent process would write), the content that stretches pages.
func seedLayout(t testing.TB, h consoleHub) layoutSeed {
	t.Helper()
	var s layoutSeed
	title := strings.TrimSpace(strings.Repeat("a long title word ", 56))[:1000]
	fields := map[string]string{}
	for i := range 600 {
		fields[fmt.Sprintf("field_%03d", i)] = "a value of the payload"
	}
	payload, _ := json.Marshal(fields) // 20 KB
	var desc strings.Builder
	for i := range 400 {
		fmt.Fprintf(&desc, "Line %d of a long description, one of many.\n", i)
	}
	body, _ := json.Marshal(map[string]any{"type": "review", "title": title, "payload": json.RawMessage(payload),
		"description": desc.String()})
	code, out := h.api(t, http.MethodPost, "/v1/tasks", string(body))
	var created struct {
		Task cks.Task `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &created); code != http.StatusCreated || err != nil {
		t.Fatalf("create_task: %d %s %v", code, out, err)
	}
	s.LongTask = created.Task.ID
	b := h.open(t)
	ctx := context.Background()
	s.Question = ask(t, b, "How does cks stop a running task?")
	content, _ := json.Marshal(map[string]string{"text": "A claim whose source is " + "https://example.com/" + longWord(300), "source": longWord(120)})
	c, err := b.Objects.CreateObject(ctx, knowledge.NewObject{Kind: cks.KindClaim, Title: "claim " + longWord(200),
		Content: content, Status: cks.StatusProposed, CreatedBy: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Objects.ClaimObject(ctx, c.ID, "critic/"+longWord(90), []string{cks.StatusProposed}); err != nil {
		t.Fatal(err)
	}
	s.Claim = c.ID
	s.Forked = forked(t, b)
	why := knowledge.Attachment{Object: knowledge.NewObject{Kind: cks.KindRationale, Title: "merge of 2 and 3",
		Content: []byte(`{"text":"kept both edits","conflicts":[]}`)}, BaseType: cks.BaseDependsOn, SemanticType: cks.SemResolves}
	if _, _, err := b.Objects.MergeVersions(ctx, s.Forked, []int64{2, 3},
		[]byte(`{"text":"the sky is blue by day","source":"b.md","tags":["x"],"note":"moved"}`), "fork_resolution", &why); err != nil {
		t.Fatal(err)
	}
	return s
}

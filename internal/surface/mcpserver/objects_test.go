package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/llm"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestObjectTools: submit_research creates a question awaiting research,
// recorded as created by the caller; once the pipeline has run, get_object
// shows its log and, under reasoning, the claims, critique, synthesis and
// rationale of the chain. Bad input is a tool error naming the field.
func TestObjectTools(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Objects: e.store.Objects})
	cs := connectInMemory(t, e.srv)

	q := structured[cks.Object](t, call(t, cs, mcpserver.ToolSubmitResearch, map[string]any{"question": "How does cks stop a running task?"}))
	if q.Kind != cks.KindQuestion || q.Status != cks.StatusAwaitingResearch || q.CreatedBy != "mcp" || q.ID <= 0 {
		t.Fatalf("submit_research = %+v", q)
	}
	var content pipeline.Question
	if err := json.Unmarshal(q.Content, &content); err != nil || content.Question != "How does cks stop a running task?" || content.Corpus != "" {
		t.Fatalf("content %s, %v", q.Content, err)
	}

	c, err := llm.LoadCorpusFS(corpus.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	o, err := pipeline.New(pipeline.Config{Store: e.store.Objects, Changes: e.store.Changes, Model: llm.NewOffline(), Corpus: c})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := o.RunSequential(context.Background(), q.ID); err != nil || got.Status != cks.StatusResolved {
		t.Fatalf("pipeline: %s, %v", got.Status, err)
	}

	v := structured[cks.ObjectView](t, call(t, cs, mcpserver.ToolGetObject, map[string]any{"object_id": q.ID}))
	if v.ID != q.ID || v.Status != cks.StatusResolved || len(v.Log) != 5 || len(v.Edges) == 0 {
		t.Fatalf("get_object: status %s, %d log entries, %d edges", v.Status, len(v.Log), len(v.Edges))
	}
	kinds := map[string]int{}
	for _, r := range v.Reasoning {
		kinds[r.Kind]++
	}
	for _, k := range []string{cks.KindClaim, cks.KindCritique, cks.KindSynthesis, cks.KindRationale} {
		if kinds[k] == 0 {
			t.Errorf("reasoning has no %s (kinds %v)", k, kinds)
		}
	}
	for _, e := range v.Log {
		if e.ReasoningNodeID == nil {
			continue
		}
		found := false
		for _, r := range v.Reasoning {
			found = found || r.ID == *e.ReasoningNodeID
		}
		if !found {
			t.Errorf("log entry %s/%s points to node %d, which reasoning does not hold", e.Agent, e.Action, *e.ReasoningNodeID)
		}
	}

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{mcpserver.ToolSubmitResearch, map[string]any{"question": "  "}, "question"},
		{mcpserver.ToolSubmitResearch, map[string]any{"question": strings.Repeat("why ", 501)}, "at most 2000 bytes"},
		{mcpserver.ToolSubmitResearch, map[string]any{"question": "why?", "corpus": "relative/dir"}, "corpus"},
		{mcpserver.ToolGetObject, map[string]any{"object_id": 999999}, "999999"},
	} {
		r := call(t, cs, c.tool, c.args)
		if !r.IsError || !strings.Contains(text(t, r), c.want) {
			t.Errorf("%s %v: IsError=%v %q, want a tool error naming %q", c.tool, c.args, r.IsError, text(t, r), c.want)
		}
	}
}

// TestObjectToolsReadOnly: a principal with read on / may read objects but
// not submit questions.
func TestObjectToolsReadOnly(t *testing.T) {
	hs, e, _ := mcpOverAPI(t)
	cs := connectAs(t, hs.URL, token(t, e.store.Principals, cks.Grant{Resource: "/", Permission: auth.PermRead}))
	r := call(t, cs, mcpserver.ToolSubmitResearch, map[string]any{"question": "Why?"})
	if !r.IsError || !strings.Contains(text(t, r), "needs create on /objects") {
		t.Fatalf("submit_research with read on /: IsError=%v %q", r.IsError, text(t, r))
	}
	page, err := e.store.Objects.ListObjects(ctx(t), cks.ObjectFilter{})
	if err != nil || len(page.Objects) != 0 {
		t.Fatalf("objects after a refused submit: %v, %v", page.Objects, err)
	}
}

// TestGetObjectHeads: get_object carries the head versions and forked —
// one head and forked false for a fresh object, both heads and forked true
// after two writes from the same base; the raw structured output names the
// fields.
func TestGetObjectHeads(t *testing.T) {
	e := newEnv(t)
	mcpserver.Register(e.srv, &ops.Services{Objects: e.store.Objects})
	cs := connectInMemory(t, e.srv)
	q := structured[cks.Object](t, call(t, cs, mcpserver.ToolSubmitResearch, map[string]any{"question": "Which head wins?"}))

	v := structured[cks.ObjectView](t, call(t, cs, mcpserver.ToolGetObject, map[string]any{"object_id": q.ID}))
	if v.Forked || len(v.Heads) != 1 || v.Heads[0].Version != q.HeadVersion {
		t.Fatalf("fresh object: forked %v, heads %+v, want the one head v%d", v.Forked, v.Heads, q.HeadVersion)
	}
	vs := e.store.Objects
	a, err := vs.WriteVersion(ctx(t), q.ID, q.HeadVersion, json.RawMessage(`{"question":"A"}`), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := vs.WriteVersion(ctx(t), q.ID, q.HeadVersion, json.RawMessage(`{"question":"B"}`), "bob")
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, cs, mcpserver.ToolGetObject, map[string]any{"object_id": q.ID})
	v = structured[cks.ObjectView](t, r)
	if !v.Forked || len(v.Heads) != 2 || v.Heads[0].Version != a.Version || v.Heads[1].Version != b.Version ||
		v.Heads[0].Author != "alice" || v.Heads[1].Author != "bob" || v.Heads[0].ContentHash == v.Heads[1].ContentHash {
		t.Fatalf("forked object: forked %v, heads %+v", v.Forked, v.Heads)
	}
	raw, _ := json.Marshal(r.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["forked"] != true {
		t.Fatalf("structured output without forked true: %.300s", raw)
	}
	heads, _ := m["heads"].([]any)
	if len(heads) != 2 {
		t.Fatalf("structured output heads: %.300s", raw)
	}
	for _, h := range heads {
		hm, _ := h.(map[string]any)
		for _, k := range []string{"version", "parents", "author", "created_at", "content", "content_hash"} {
			if _, ok := hm[k]; !ok {
				t.Errorf("head without %s: %v", k, hm)
			}
		}
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/corpus"
	"github.com/cks-dev/cks/llm"
	"github.com/cks-dev/cks/pipeline"
	"github.com/cks-dev/cks/store"
)

// TestObjectsRoundTrip: POST /v1/objects creates a question awaiting
// research, created by the principal; after the pipeline ran, GET
// /v1/objects/{id} holds the log, the edges and the linked reasoning, and
// GET /v1/objects lists and filters.
func TestObjectsRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.client()
	q, err := c.SubmitResearch(ctx, api.ResearchRequest{Question: "How does cks stop a running task?"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind != pipeline.KindQuestion || q.Status != pipeline.AwaitingResearch || q.CreatedBy != "admin" {
		t.Fatalf("created %+v", q)
	}
	status, body := f.do(t, f.token, "POST", "/v1/objects", `{"question":"Where is the corpus?","corpus":"/srv/docs"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/objects: %d %s", status, body)
	}
	var other store.Object
	if err := json.Unmarshal([]byte(body), &other); err != nil {
		t.Fatal(err)
	}
	var content pipeline.Question
	if err := json.Unmarshal(other.Content, &content); err != nil || content.Corpus != "/srv/docs" {
		t.Fatalf("content %s, %v", other.Content, err)
	}

	cor, err := llm.LoadCorpusFS(corpus.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	o, err := pipeline.New(pipeline.Config{Store: f.store, Model: llm.NewOffline(), Corpus: cor})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := o.RunSequential(ctx, q.ID); err != nil || got.Status != pipeline.Resolved {
		t.Fatalf("pipeline: %s, %v", got.Status, err)
	}

	v, err := c.GetObject(ctx, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	var chain []string
	for _, e := range v.Log {
		chain = append(chain, e.Agent+":"+e.TransitionedTo)
	}
	if got := strings.Join(chain, " "); got != "admin:awaiting_research researcher:awaiting_critique critic:awaiting_synthesis synthesizer:awaiting_arbitration arbiter:resolved" {
		t.Fatalf("log %s", got)
	}
	byID := map[int64]store.Object{}
	for _, r := range v.Reasoning {
		byID[r.ID] = r
		if r.ClaimToken != "" {
			t.Errorf("object %d shows its claim token", r.ID)
		}
	}
	for _, e := range v.Log {
		if e.ReasoningNodeID != nil {
			if _, ok := byID[*e.ReasoningNodeID]; !ok {
				t.Errorf("reasoning node %d of %s's entry not resolved", *e.ReasoningNodeID, e.Agent)
			}
		}
	}
	var syn *store.Object
	claims := 0
	for _, r := range v.Reasoning {
		switch r.Kind {
		case pipeline.KindSynthesis:
			syn = &r
		case pipeline.KindClaim:
			claims++
			if len(r.Log) == 0 {
				t.Errorf("claim %d without its own log", r.ID)
			}
		}
	}
	if syn == nil || claims == 0 {
		t.Fatalf("reasoning: synthesis %v, %d claims", syn, claims)
	}
	var sc pipeline.SynthesisContent
	if err := json.Unmarshal(syn.Content, &sc); err != nil || sc.Answer == "" || len(sc.Citations) == 0 {
		t.Fatalf("synthesis %s, %v", syn.Content, err)
	}
	// The raw body has the documented field.
	if _, body := f.do(t, f.token, "GET", fmt.Sprintf("/v1/objects/%d", q.ID), ""); !strings.Contains(body, `"reasoning": [`) {
		t.Fatalf("GET body has no reasoning: %.300s", body)
	}

	page, err := c.ListObjects(ctx, store.ObjectFilter{Kinds: []string{pipeline.KindQuestion}})
	if err != nil || len(page.Objects) != 2 {
		t.Fatalf("list questions: %d, %v", len(page.Objects), err)
	}
	page, err = c.ListObjects(ctx, store.ObjectFilter{Statuses: []string{pipeline.AwaitingResearch}, Kinds: []string{pipeline.KindQuestion}})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].ID != other.ID {
		t.Fatalf("list awaiting research: %+v, %v", page.Objects, err)
	}
	page, err = c.ListObjects(ctx, store.ObjectFilter{Limit: 1})
	if err != nil || len(page.Objects) != 1 || page.Next == 0 {
		t.Fatalf("first page of 1: %+v, %v", page, err)
	}
	next, err := c.ListObjects(ctx, store.ObjectFilter{Limit: 1, After: page.Next})
	if err != nil || len(next.Objects) != 1 || next.Objects[0].ID <= page.Objects[0].ID {
		t.Fatalf("second page: %+v, %v", next, err)
	}
}

// TestObjectsBadInput: an empty, blank or too long question, a relative
// corpus path, unknown fields and a bad query are 400s naming the field; an
// unknown id is a 404 naming it.
func TestObjectsBadInput(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/objects", `{"question":""}`, "question"},
		{"POST", "/v1/objects", `{"question":"   "}`, "question"},
		{"POST", "/v1/objects", `{}`, "question"},
		{"POST", "/v1/objects", fmt.Sprintf(`{"question":%q}`, strings.Repeat("x", api.MaxQuestionLen+1)), "question"},
		{"POST", "/v1/objects", `{"question":"why?","corpus":"docs"}`, "corpus"},
		{"POST", "/v1/objects", `{"question":"why?","kind":"claim"}`, "kind"},
		{"GET", "/v1/objects?limit=-1", "", "limit"},
		{"GET", "/v1/objects?cursor=x", "", "cursor"},
		{"GET", "/v1/objects/abc", "", "object_id"},
	} {
		status, body := f.do(t, f.token, c.method, c.path, c.body)
		if status != http.StatusBadRequest {
			t.Errorf("%s %s %.60s: %d %s, want 400", c.method, c.path, c.body, status, body)
			continue
		}
		if e := decodeError(t, body); e.Error.Field != c.field {
			t.Errorf("%s %s %.60s: field %q (%s), want %q", c.method, c.path, c.body, e.Error.Field, e.Error.Message, c.field)
		}
	}
	if status, body := f.do(t, f.token, "POST", "/v1/objects", fmt.Sprintf(`{"question":%q}`, strings.Repeat("x", api.MaxQuestionLen))); status != http.StatusCreated {
		t.Errorf("a question of exactly %d bytes: %d %s", api.MaxQuestionLen, status, body)
	}
	status, body := f.do(t, f.token, "GET", "/v1/objects/424242", "")
	if status != http.StatusNotFound || !strings.Contains(decodeError(t, body).Error.Message, "424242") {
		t.Fatalf("unknown object: %d %s, want 404 naming it", status, body)
	}
	var ce *client.Error
	if _, err := f.client().GetObject(context.Background(), 424242); err == nil || !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
		t.Fatalf("client GetObject of an unknown id: %v", err)
	}
}

// TestObjectsPermissions: a read-only principal reads and lists objects but
// is refused a submission with a 403 naming create on /objects; create on
// /objects alone may submit but not read.
func TestObjectsPermissions(t *testing.T) {
	f := newFixture(t)
	reader := f.tokenWith(t, store.Grant{Resource: "/", Permission: auth.PermRead})
	status, body := f.do(t, reader, "POST", "/v1/objects", `{"question":"Why?"}`)
	wantForbidden(t, status, body, "create", "/objects")
	submitter := f.tokenWith(t, store.Grant{Resource: "/objects", Permission: auth.PermCreate})
	status, body = f.do(t, submitter, "POST", "/v1/objects", `{"question":"Why?"}`)
	if status != http.StatusCreated {
		t.Fatalf("create on /objects: %d %s", status, body)
	}
	var o store.Object
	if err := json.Unmarshal([]byte(body), &o); err != nil || o.CreatedBy != "p" {
		t.Fatalf("created %s: %v; want created_by p", body, err)
	}
	path := fmt.Sprintf("/v1/objects/%d", o.ID)
	status, body = f.do(t, submitter, "GET", path, "")
	wantForbidden(t, status, body, "read", fmt.Sprintf("/objects/%d", o.ID))
	if status, body := f.do(t, reader, "GET", path, ""); status != http.StatusOK {
		t.Fatalf("read on /: GET %s: %d %s", path, status, body)
	}
	if status, body := f.do(t, reader, "GET", "/v1/objects", ""); status != http.StatusOK {
		t.Fatalf("read on /: GET /v1/objects: %d %s", status, body)
	}
	one := f.tokenWith(t, store.Grant{Resource: fmt.Sprintf("/objects/%d", o.ID), Permission: auth.PermRead})
	status, body = f.do(t, one, "GET", "/v1/objects", "")
	wantForbidden(t, status, body, "read", "/objects")
}

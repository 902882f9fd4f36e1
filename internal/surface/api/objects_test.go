package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/base/corpus"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/llm"
)

// TestObjectsRoundTrip: POST /v1/objects creates a question awaiting
// research, created by the principal; after the pipeline ran, GET
// /v1/objects/{id} holds the log, the edges and the linked reasoning, and
// GET /v1/objects lists and filters.
func TestObjectsRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.client()
	q, err := c.SubmitResearch(ctx, cks.SubmitResearchInput{Question: "How does cks stop a running task?"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind != cks.KindQuestion || q.Status != cks.StatusAwaitingResearch || q.CreatedBy != "admin" {
		t.Fatalf("created %+v", q)
	}
	status, body := f.do(t, f.token, "POST", "/v1/objects", `{"question":"Where is the corpus?","corpus":"/srv/docs"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/objects: %d %s", status, body)
	}
	var other cks.Object
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
	o, err := pipeline.New(pipeline.Config{Store: f.store.Objects, Changes: f.store.Changes, Model: llm.NewOffline(), Corpus: cor})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := o.RunSequential(ctx, q.ID); err != nil || got.Status != cks.StatusResolved {
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
	byID := map[int64]cks.Object{}
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
	var syn *cks.Object
	claims := 0
	for _, r := range v.Reasoning {
		switch r.Kind {
		case cks.KindSynthesis:
			syn = &r
		case cks.KindClaim:
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
	if _, body := f.do(t, f.token, "GET", fmt.Sprintf("/v1/objects/%d", q.ID), ""); !strings.Contains(body, `"reasoning":[`) {
		t.Fatalf("GET body has no reasoning: %.300s", body)
	}

	page, err := c.ListObjects(ctx, cks.ObjectFilter{Kinds: []string{cks.KindQuestion}})
	if err != nil || len(page.Objects) != 2 {
		t.Fatalf("list questions: %d, %v", len(page.Objects), err)
	}
	page, err = c.ListObjects(ctx, cks.ObjectFilter{Statuses: []string{cks.StatusAwaitingResearch}, Kinds: []string{cks.KindQuestion}})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].ID != other.ID {
		t.Fatalf("list awaiting research: %+v, %v", page.Objects, err)
	}
	page, err = c.ListObjects(ctx, cks.ObjectFilter{Limit: 1})
	if err != nil || len(page.Objects) != 1 || page.Next == 0 {
		t.Fatalf("first page of 1: %+v, %v", page, err)
	}
	next, err := c.ListObjects(ctx, cks.ObjectFilter{Limit: 1, After: page.Next})
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
		{"POST", "/v1/objects", fmt.Sprintf(`{"question":%q}`, strings.Repeat("x", pipeline.MaxQuestionLen+1)), "question"},
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
	if status, body := f.do(t, f.token, "POST", "/v1/objects", fmt.Sprintf(`{"question":%q}`, strings.Repeat("x", pipeline.MaxQuestionLen))); status != http.StatusCreated {
		t.Errorf("a question of exactly %d bytes: %d %s", pipeline.MaxQuestionLen, status, body)
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
	reader := f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
	status, body := f.do(t, reader, "POST", "/v1/objects", `{"question":"Why?"}`)
	wantForbidden(t, status, body, "create", "/objects")
	submitter := f.tokenWith(t, cks.Grant{Resource: "/objects", Permission: auth.PermCreate})
	status, body = f.do(t, submitter, "POST", "/v1/objects", `{"question":"Why?"}`)
	if status != http.StatusCreated {
		t.Fatalf("create on /objects: %d %s", status, body)
	}
	var o cks.Object
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
	one := f.tokenWith(t, cks.Grant{Resource: fmt.Sprintf("/objects/%d", o.ID), Permission: auth.PermRead})
	status, body = f.do(t, one, "GET", "/v1/objects", "")
	wantForbidden(t, status, body, "read", "/objects")
}

// versionFixture creates a question object and returns its id and first
// version.
func versionFixture(t *testing.T, f *fixture) (int64, int64) {
	t.Helper()
	q, err := f.client().SubmitResearch(context.Background(), cks.SubmitResearchInput{Question: "Which version wins?"})
	if err != nil {
		t.Fatal(err)
	}
	if q.HeadVersion <= 0 {
		t.Fatalf("new object has head_version %d", q.HeadVersion)
	}
	return q.ID, q.HeadVersion
}

// TestObjectVersionsRoundTrip: a write from the head replaces it; a second
// write from the old base forks the object, and GET /v1/objects/{id} shows
// both heads with forked true; GET …/versions lists the DAG.
func TestObjectVersionsRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.client()
	id, v1 := versionFixture(t, f)

	v, err := c.GetObject(ctx, id)
	if err != nil || v.Forked || len(v.Heads) != 1 || v.Heads[0].Version != v1 {
		t.Fatalf("fresh object: forked %v, heads %+v, %v", v.Forked, v.Heads, err)
	}
	if _, body := f.do(t, f.token, "GET", fmt.Sprintf("/v1/objects/%d", id), ""); !strings.Contains(body, `"forked":false`) ||
		!strings.Contains(body, `"heads":[`) {
		t.Fatalf("GET body without heads and forked: %.400s", body)
	}

	status, body := f.do(t, f.token, "POST", fmt.Sprintf("/v1/objects/%d/versions", id),
		fmt.Sprintf(`{"base_version":%d,"content":{"question":"A","tags":["x"]}}`, v1))
	if status != http.StatusCreated {
		t.Fatalf("write from the head: %d %s", status, body)
	}
	var v2 cks.Version
	if err := json.Unmarshal([]byte(body), &v2); err != nil || v2.Version <= v1 || len(v2.Parents) != 1 || v2.Parents[0] != v1 ||
		v2.Author != "admin" || v2.ContentHash == "" {
		t.Fatalf("version %s: %v", body, err)
	}
	if v, err := c.GetObject(ctx, id); err != nil || v.Forked || len(v.Heads) != 1 || v.Heads[0].Version != v2.Version || v.HeadVersion != v2.Version {
		t.Fatalf("after a write from the head: forked %v, heads %+v, head_version %d, %v", v.Forked, v.Heads, v.HeadVersion, err)
	}

	v3, err := c.WriteVersion(ctx, id, v1, json.RawMessage(`{"question":"B","tags":["x"]}`))
	if err != nil || len(v3.Parents) != 1 || v3.Parents[0] != v1 {
		t.Fatalf("write from the old base: %+v, %v", v3, err)
	}
	v, err = c.GetObject(ctx, id)
	if err != nil || !v.Forked || len(v.Heads) != 2 || v.Heads[0].Version != v2.Version || v.Heads[1].Version != v3.Version {
		t.Fatalf("after a write from the old base: forked %v, heads %+v, %v", v.Forked, v.Heads, err)
	}
	var hc struct{ Question string }
	if err := json.Unmarshal(v.Heads[1].Content, &hc); err != nil || hc.Question != "B" {
		t.Fatalf("second head's content %s", v.Heads[1].Content)
	}
	_, body = f.do(t, f.token, "GET", fmt.Sprintf("/v1/objects/%d", id), "")
	if !strings.Contains(body, `"forked":true`) {
		t.Fatalf("GET body does not say forked: %.400s", body)
	}

	l, err := c.ObjectVersions(ctx, id)
	if err != nil || l.ObjectID != id || len(l.Versions) != 3 || !l.Forked || fmt.Sprint(l.Heads) != fmt.Sprint([]int64{v2.Version, v3.Version}) {
		t.Fatalf("versions: %+v, %v", l, err)
	}
	if l.Versions[0].Version != v1 || len(l.Versions[0].Parents) != 0 {
		t.Fatalf("first version %+v, want v%d without parents", l.Versions[0], v1)
	}
}

// TestObjectVersionsBadInput: an unknown base, content that is not a JSON
// object, a missing field and an unknown object are refused naming what was
// wrong, and nothing is written.
func TestObjectVersionsBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id, v1 := versionFixture(t, f)
	path := fmt.Sprintf("/v1/objects/%d/versions", id)
	for _, c := range []struct{ body, field string }{
		{`{"base_version":424242,"content":{"question":"x"}}`, "base_version"},
		{`{"content":{"question":"x"}}`, "base_version"},
		{`{"base_version":-1,"content":{"question":"x"}}`, "base_version"},
		{`{"base_version":"one","content":{"question":"x"}}`, "base_version"},
		{fmt.Sprintf(`{"base_version":%d,"content":"a string"}`, v1), "content"},
		{fmt.Sprintf(`{"base_version":%d,"content":["a","list"]}`, v1), "content"},
		{fmt.Sprintf(`{"base_version":%d,"content":null}`, v1), "content"},
		{fmt.Sprintf(`{"base_version":%d,"content":42}`, v1), "content"},
		{fmt.Sprintf(`{"base_version":%d}`, v1), "content"},
		{fmt.Sprintf(`{"base_version":%d,"content":{},"author":"me"}`, v1), "author"},
	} {
		status, body := f.do(t, f.token, "POST", path, c.body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", c.body, status, body)
			continue
		}
		if e := decodeError(t, body); e.Error.Field != c.field {
			t.Errorf("%s: field %q (%s), want %q", c.body, e.Error.Field, e.Error.Message, c.field)
		}
	}
	// A version of another object is no base for this one: versions are
	// numbered within each object, so the number of the other's second
	// version names none of this one's.
	other, otherV := versionFixture(t, f)
	status, body := f.do(t, f.token, "POST", fmt.Sprintf("/v1/objects/%d/versions", other), fmt.Sprintf(`{"base_version":%d,"content":{"v":2}}`, otherV))
	var otherV2 cks.Version
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &otherV2) != nil || otherV2.Version != otherV+1 {
		t.Fatalf("second version of the other object: %d %s", status, body)
	}
	status, body = f.do(t, f.token, "POST", path, fmt.Sprintf(`{"base_version":%d,"content":{}}`, otherV2.Version))
	if status != http.StatusBadRequest || decodeError(t, body).Error.Field != "base_version" {
		t.Errorf("base of another object: %d %s, want 400 naming base_version", status, body)
	}
	status, body = f.do(t, f.token, "POST", "/v1/objects/424242/versions", fmt.Sprintf(`{"base_version":%d,"content":{}}`, v1))
	if status != http.StatusNotFound || !strings.Contains(decodeError(t, body).Error.Message, "424242") {
		t.Errorf("unknown object: %d %s, want 404 naming it", status, body)
	}
	if status, body := f.do(t, f.token, "GET", "/v1/objects/424242/versions", ""); status != http.StatusNotFound {
		t.Errorf("versions of an unknown object: %d %s, want 404", status, body)
	}
	if status, body := f.do(t, f.token, "GET", "/v1/objects/abc/versions", ""); status != http.StatusBadRequest ||
		decodeError(t, body).Error.Field != "object_id" {
		t.Errorf("versions of object abc: %d %s, want 400 naming object_id", status, body)
	}
	if _, err := f.client().WriteVersion(ctx, id, 424242, json.RawMessage(`{}`)); apiErr(t, err).Field != "base_version" {
		t.Errorf("client WriteVersion from an unknown base: %v", err)
	}
	// Nothing was written.
	for oid, want := range map[int64]int{id: 1, other: 2} {
		l, err := f.client().ObjectVersions(ctx, oid)
		if err != nil || len(l.Versions) != want || l.Forked {
			t.Errorf("object %d after refused writes: %+v, %v; want its %d versions, unforked", oid, l, err, want)
		}
	}
	if o, err := f.store.Objects.GetObject(ctx, id); err != nil || o.HeadVersion != v1 {
		t.Errorf("object after refused writes: head_version %d, %v; want %d", o.HeadVersion, err, v1)
	}
}

// TestObjectVersionsPermissions: reading versions needs read on
// /objects/ID, writing one update on /objects/ID; a read-only principal is
// refused with a 403 naming update and nothing is written.
func TestObjectVersionsPermissions(t *testing.T) {
	f := newFixture(t)
	id, v1 := versionFixture(t, f)
	res := fmt.Sprintf("/objects/%d", id)
	path := fmt.Sprintf("/v1/objects/%d/versions", id)
	write := fmt.Sprintf(`{"base_version":%d,"content":{"question":"mine"}}`, v1)
	reader := f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
	status, body := f.do(t, reader, "POST", path, write)
	wantForbidden(t, status, body, "update", res)
	if status, body := f.do(t, reader, "GET", path, ""); status != http.StatusOK {
		t.Fatalf("read on /: GET %s: %d %s", path, status, body)
	}
	writer := f.tokenWith(t, cks.Grant{Resource: res, Permission: auth.PermUpdate})
	status, body = f.do(t, writer, "GET", path, "")
	wantForbidden(t, status, body, "read", res)
	l, err := f.client().ObjectVersions(context.Background(), id)
	if err != nil || len(l.Versions) != 1 {
		t.Fatalf("after the refused write: %+v, %v", l, err)
	}
	status, body = f.do(t, writer, "POST", path, write)
	if status != http.StatusCreated {
		t.Fatalf("update on %s: %d %s", res, status, body)
	}
	var v cks.Version
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Author != "p" {
		t.Fatalf("written %s: %v; want author p", body, err)
	}
}

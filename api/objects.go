package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/pipeline"
	"github.com/cks-dev/cks/store"
)

// MaxQuestionLen bounds a research question (bytes).
const MaxQuestionLen = 2000

// maxCorpusPathLen bounds the corpus directory a question may name.
const maxCorpusPathLen = 4096

// ObjectStore is what the object endpoints need of a store: the knowledge
// store of ADR-007 with its version history. A store.Store satisfies it.
type ObjectStore interface {
	store.Knowledge
	store.Versions
}

// ResearchRequest is the body of POST /v1/objects (and the arguments of the
// MCP tool submit_research): a question for the research pipeline.
type ResearchRequest struct {
	Question string `json:"question"`
	// Corpus, optional, is a directory (an absolute path on the host the
	// pipeline runs on) the Researcher reads instead of its default corpus.
	Corpus string `json:"corpus,omitempty"`
}

// NewQuestion validates r and returns the question object to create for
// createdBy: kind question, status awaiting_research, content
// {"question", "corpus"?}. Errors are FieldErrors naming question or corpus.
func NewQuestion(r ResearchRequest, createdBy string) (store.NewObject, error) {
	if err := cmp.Or(store.ValidateText("question", r.Question), store.ValidateText("corpus", r.Corpus)); err != nil {
		return store.NewObject{}, err
	}
	q := strings.TrimSpace(r.Question)
	switch {
	case q == "":
		return store.NewObject{}, &store.FieldError{Field: "question", Expected: "a non-empty question"}
	case len(r.Question) > MaxQuestionLen:
		return store.NewObject{}, &store.FieldError{Field: "question",
			Expected: fmt.Sprintf("at most %d bytes, got %d", MaxQuestionLen, len(r.Question))}
	}
	if r.Corpus != "" {
		switch {
		case len(r.Corpus) > maxCorpusPathLen:
			return store.NewObject{}, &store.FieldError{Field: "corpus", Expected: fmt.Sprintf("a directory path of at most %d bytes", maxCorpusPathLen)}
		case !filepath.IsAbs(r.Corpus) || strings.ContainsRune(r.Corpus, 0):
			// A relative path would be resolved by whichever process runs
			// the pipeline, which is not the caller's working directory.
			return store.NewObject{}, &store.FieldError{Field: "corpus",
				Expected: fmt.Sprintf("an absolute directory path on the pipeline's host, got %q", r.Corpus)}
		}
	}
	content, err := json.Marshal(pipeline.Question{Question: q, Corpus: r.Corpus})
	if err != nil {
		return store.NewObject{}, err
	}
	title := q
	if len(title) > 200 {
		title = strings.ToValidUTF8(title[:197], "") + "..."
	}
	return store.NewObject{Kind: pipeline.KindQuestion, Title: title, Content: content,
		Status: pipeline.AwaitingResearch, CreatedBy: createdBy}, nil
}

// ObjectView is the body of GET /v1/objects/{id} (and of the MCP tool
// get_object): the object with its transition log and edges, and under
// "reasoning" every object at the other end of one of its edges, each with
// its own log and edges — for a question, its claims, critiques, syntheses,
// rationales and unusable model replies — so one call shows the whole chain.
// Reasoning is ordered by object id (creation order). Heads are the
// object's head versions (store.Versions), ascending; Forked is true when
// there is more than one (the fork_detection sweeper then enqueues a
// resolve_fork task).
type ObjectView struct {
	store.Object
	Heads []store.Version `json:"heads"`
	// Forked shadows Object.Forked so that the body always says it.
	Forked    bool           `json:"forked"`
	Reasoning []store.Object `json:"reasoning"`
}

// VersionList is the body of GET /v1/objects/{id}/versions: every version
// of the object, ascending by id (each names its parents, so the list is
// the version DAG), and the numbers of its heads. Versions are numbered
// per object (store.Version).
type VersionList struct {
	ObjectID int64           `json:"object_id"`
	Versions []store.Version `json:"versions"`
	Heads    []int64         `json:"heads"`
	Forked   bool            `json:"forked"`
}

// WriteVersionRequest is the body of POST /v1/objects/{id}/versions: the
// new content (a JSON object) and the number of the version it was written
// from. A base that is no longer a head makes a fork.
type WriteVersionRequest struct {
	BaseVersion int64           `json:"base_version"`
	Content     json.RawMessage `json:"content"`
}

// CheckVersionContent validates the content of a version write: a JSON
// object (a FieldError naming content otherwise).
func CheckVersionContent(content json.RawMessage) error {
	b := bytes.TrimSpace(content)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		got := string(b)
		if got == "" {
			got = "nothing"
		} else if len(got) > 40 {
			got = got[:37] + "..."
		}
		return &store.FieldError{Field: "content", Expected: "a JSON object, got " + got}
	}
	return nil
}

// WriteObjectVersion validates and writes content as a version of object
// id based on version base, by author: a base that is not a positive
// integer is a FieldError naming base_version, content that is not a JSON
// object one naming content, an unknown object ErrNotFound; nothing is
// written on error.
func WriteObjectVersion(ctx context.Context, vs ObjectStore, id, base int64, content json.RawMessage, author string) (store.Version, error) {
	if base <= 0 {
		return store.Version{}, &store.FieldError{Field: "base_version",
			Expected: fmt.Sprintf("the number of a version of object %d (a positive integer), got %d", id, base)}
	}
	if err := CheckVersionContent(content); err != nil {
		return store.Version{}, err
	}
	// An unknown object is a 404, not a bad base.
	if _, err := vs.Heads(ctx, id); err != nil {
		return store.Version{}, err
	}
	return vs.WriteVersion(ctx, id, base, content, author)
}

// ListObjectVersions returns the version DAG of object id (VersionList).
func ListObjectVersions(ctx context.Context, vs ObjectStore, id int64) (VersionList, error) {
	if _, err := vs.Heads(ctx, id); err != nil {
		return VersionList{}, err
	}
	all, err := vs.ObjectVersions(ctx, id)
	if err != nil {
		return VersionList{}, err
	}
	l := VersionList{ObjectID: id, Versions: all, Heads: []int64{}}
	if l.Versions == nil {
		l.Versions = []store.Version{}
	}
	// The heads of this very list: the versions no other names as a parent.
	parent := map[int64]bool{}
	for _, v := range all {
		for _, p := range v.Parents {
			parent[p] = true
		}
	}
	for _, v := range all {
		if !parent[v.Version] {
			l.Heads = append(l.Heads, v.Version)
		}
	}
	l.Forked = len(l.Heads) > 1
	return l, nil
}

// ViewObject reads object id and resolves its linked objects (ObjectView).
// Claim tokens are left out: they are the claiming worker's secret.
func ViewObject(ctx context.Context, k ObjectStore, id int64) (ObjectView, error) {
	o, err := k.GetObject(ctx, id)
	if err != nil {
		return ObjectView{}, err
	}
	o.ClaimToken = ""
	v := ObjectView{Object: o, Heads: []store.Version{}, Reasoning: []store.Object{}}
	heads, err := k.Heads(ctx, id)
	if err != nil {
		return ObjectView{}, fmt.Errorf("heads of object %d: %w", id, err)
	}
	if heads != nil {
		v.Heads = heads
	}
	v.Forked = len(v.Heads) > 1 || o.Forked
	v.Object.Forked = v.Forked
	var ids []int64
	for _, e := range o.Edges {
		other := e.Src
		if other == id {
			other = e.Dst
		}
		if other != id && !slices.Contains(ids, other) {
			ids = append(ids, other)
		}
	}
	slices.Sort(ids)
	for _, oid := range ids {
		l, err := k.GetObject(ctx, oid)
		if err != nil {
			return ObjectView{}, fmt.Errorf("object %d, linked to %d: %w", oid, id, err)
		}
		l.ClaimToken = ""
		v.Reasoning = append(v.Reasoning, l)
	}
	return v, nil
}

// routeObjects registers the knowledge-store endpoints: submitting a
// research question needs create on /objects, reading an object or its
// versions read on /objects/ID, writing a version update on /objects/ID,
// listing read on /objects.
func (a *API) routeObjects() {
	a.route("POST /v1/objects", auth.PermCreate, auth.ResourceObjects, http.HandlerFunc(a.createObject))
	a.route("GET /v1/objects", auth.PermRead, auth.ResourceObjects, http.HandlerFunc(a.listObjects))
	a.route("GET /v1/objects/{id}", auth.PermRead, auth.ResourceObjects+"/{id}", http.HandlerFunc(a.getObject))
	a.route("GET /v1/objects/{id}/versions", auth.PermRead, auth.ResourceObjects+"/{id}", http.HandlerFunc(a.listVersions))
	a.route("POST /v1/objects/{id}/versions", auth.PermUpdate, auth.ResourceObjects+"/{id}", http.HandlerFunc(a.writeVersion))
}

func (a *API) listVersions(w http.ResponseWriter, r *http.Request) {
	id, err := objectID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l, err := ListObjectVersions(r.Context(), a.cfg.Objects, id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *API) writeVersion(w http.ResponseWriter, r *http.Request) {
	id, err := objectID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var req WriteVersionRequest
	if err := decode(r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	v, err := WriteObjectVersion(r.Context(), a.cfg.Objects, id, req.BaseVersion, req.Content, actor(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (a *API) createObject(w http.ResponseWriter, r *http.Request) {
	var req ResearchRequest
	if err := decode(r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	n, err := NewQuestion(req, actor(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	o, err := a.cfg.Objects.CreateObject(r.Context(), n)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, o)
}

// objectID parses the {id} path value.
func objectID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, &store.FieldError{Field: "object_id", Expected: fmt.Sprintf("a positive integer, got %q", r.PathValue("id"))}
	}
	return id, nil
}

func (a *API) getObject(w http.ResponseWriter, r *http.Request) {
	id, err := objectID(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v, err := ViewObject(r.Context(), a.cfg.Objects, id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// ParseObjectFilter reads the query of GET /v1/objects: status and kind
// (repeatable or comma-separated), cursor and limit.
func ParseObjectFilter(q map[string][]string) (store.ObjectFilter, error) {
	f := store.ObjectFilter{Statuses: splitAll(q["status"]), Kinds: splitAll(q["kind"])}
	var err error
	if f.After, f.Limit, err = parsePage(q); err != nil {
		return f, err
	}
	return f.Validate()
}

func (a *API) listObjects(w http.ResponseWriter, r *http.Request) {
	f, err := ParseObjectFilter(r.URL.Query())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.cfg.Objects.ListObjects(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if page.Objects == nil {
		page.Objects = []store.Object{}
	}
	for i := range page.Objects {
		page.Objects[i].ClaimToken = ""
	}
	writeJSON(w, http.StatusOK, page)
}

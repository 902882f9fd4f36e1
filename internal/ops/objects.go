package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The knowledge-store operations (ADR-007): submitting a research question,
// reading objects with their reasoning, and the version DAG of an object.

// objectResource is the resource template of an operation on one object.
const objectResource = auth.ResourceObjects + "/{object_id}"

// SubmitResearch is submit_research.
var SubmitResearch = define(cks.OpSubmitResearch, &Op[cks.SubmitResearchInput, cks.Object]{
	spec: Spec{
		Title:   "Submit research question",
		Summary: "submit a research question (201, the question object in awaiting_research); an empty question or one over 2000 bytes, or a relative corpus, is a 400 naming the field",
		Description: "Submit a question to the cks research pipeline (Researcher → Critic → Synthesizer → Arbiter). " +
			"It creates a question object in status awaiting_research and returns it at once; the pipeline then moves it " +
			"through awaiting_critique, awaiting_synthesis and awaiting_arbitration to resolved (a synthesis with citations) " +
			"or, when it cannot answer within its rounds, needs_input with the reason. To wait for the answer, call get_object on " +
			"the returned id until current_status is resolved or needs_input (as `cks research --wait` does); the pipeline " +
			"runs in `cks agent pipeline` processes (`cks dev` starts one) or, with CKS_PIPELINE_IN_PROCESS=true, in the hub, " +
			"and takes seconds to minutes; while none runs the question waits in awaiting_research (`cks serve` alone runs none). " +
			"An empty question or one over 2000 bytes, or a relative corpus, is an invalid_argument error naming the field.",
		Permission: auth.PermCreate, Resource: auth.ResourceObjects,
		Status: http.StatusCreated, Surfaces: HTTP | MCP | CLI, Needs: NeedObjects,
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	check: func(in *cks.SubmitResearchInput) error {
		_, err := pipeline.NewQuestion(pipeline.Question{Question: in.Question, Corpus: in.Corpus}, LocalActor)
		return err
	},
	call: func(ctx context.Context, s *Services, in *cks.SubmitResearchInput) (cks.Object, error) {
		o, err := pipeline.Submit(ctx, s.Objects, pipeline.Question{Question: in.Question, Corpus: in.Corpus}, actor(ctx))
		o.ClaimToken = "" // the claiming worker's secret
		return o, err
	},
})

// ViewObject reads object id and resolves its linked objects (ObjectView),
// in one read transaction (knowledge.Service.View). Claim tokens are left
// out: they are the claiming worker's secret.
func ViewObject(ctx context.Context, k *knowledge.Service, id int64) (cks.ObjectView, error) {
	v, err := k.View(ctx, id)
	return withoutClaimTokens(v), err
}

// withoutClaimTokens is v with the claim tokens of its objects cleared.
func withoutClaimTokens(v cks.ObjectView) cks.ObjectView {
	v.ClaimToken = ""
	for i := range v.Reasoning {
		v.Reasoning[i].ClaimToken = ""
	}
	return v
}

// ObjectPage reads what get_object and list_object_versions answer for
// object id, in one read transaction (knowledge.Service.ViewWithVersions):
// the studio's object page. The caller needs what both need, checked as
// Do checks it.
func ObjectPage(ctx context.Context, s *Services, id int64) (cks.ObjectView, cks.VersionList, error) {
	in := &cks.ObjectInput{ObjectID: id}
	for _, op := range []Operation{GetObject, ListObjectVersionsOp} {
		if err := Authorize(ctx, s, op, in); err != nil {
			return cks.ObjectView{}, cks.VersionList{}, err
		}
		if err := op.admitInput(ctx, s, in, nil); err != nil {
			return cks.ObjectView{}, cks.VersionList{}, err
		}
	}
	v, all, err := s.Objects.ViewWithVersions(ctx, id)
	if err != nil {
		return cks.ObjectView{}, cks.VersionList{}, err
	}
	return withoutClaimTokens(v), versionList(id, all), nil
}

// GetObject is get_object.
var GetObject = define(cks.OpGetObject, &Op[cks.ObjectInput, cks.ObjectView]{
	spec: Spec{
		Title:   "Get knowledge object",
		Summary: "an object with its transition log, edges, heads and, under reasoning, every linked object",
		Description: "Show one object of the cks knowledge store (a research question, claim, synthesis, critique or rationale): " +
			"its current_status and round, its append-only transition log (ts, agent, action, transitioned_to, reasoning_node_id), " +
			"its edges (base_type, semantic_type), and under \"reasoning\" every object linked to it, each with its own log and " +
			"edges — for a question its claims (with citations and accepted/rejected status), the critiques (per-claim verdicts), " +
			"the syntheses (answer and citations) and the arbiter's rationales — so the whole chain is in one answer. " +
			"\"heads\" holds the object's head versions (version: its number within the object, parents: numbers of the versions it was written from, author, created_at, content, content_hash); " +
			"\"forked\" is true when there is more than one: concurrent writes from the same base version forked the object, " +
			"and the fork_detection sweeper enqueues a resolve_fork task for the Fork Resolution agent to merge them.",
		Permission: auth.PermRead, Resource: objectResource, Surfaces: HTTP | MCP | CLI, Needs: NeedObjects, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.ObjectInput) (cks.ObjectView, error) {
		return ViewObject(ctx, s.Objects, in.ObjectID)
	},
})

// ListObjects is list_objects.
var ListObjects = define(cks.OpListObjects, &Op[cks.ListObjectsInput, cks.ObjectPage]{
	spec: Spec{
		Title:   "List knowledge objects",
		Summary: "a page of objects (cursor paging), filtered by status, kind and a text their title or content contains",
		Description: "List objects of the knowledge store, oldest first, one page at a time (use next_cursor as cursor " +
			"for the next page), filtered by status and kind, and by q: a text the title or the content (its JSON) " +
			"contains, letters of any script in either case; a search reads objects until the page is full.",
		Permission: auth.PermRead, Resource: auth.ResourceObjects, Surfaces: HTTP | MCP | CLI, Needs: NeedObjects, Hints: readOnly,
	},
	check: func(in *cks.ListObjectsInput) error {
		_, err := in.ObjectFilter()
		return err
	},
	call: func(ctx context.Context, s *Services, in *cks.ListObjectsInput) (cks.ObjectPage, error) {
		f, err := in.ObjectFilter()
		if err != nil {
			return cks.ObjectPage{}, err
		}
		page, err := s.Objects.ListObjects(ctx, f)
		if page.Objects == nil {
			page.Objects = []cks.Object{}
		}
		for i := range page.Objects {
			page.Objects[i].ClaimToken = ""
		}
		return page, err
	},
})

// ListObjectVersions returns the version DAG of object id (VersionList).
func ListObjectVersions(ctx context.Context, vs *knowledge.Service, id int64) (cks.VersionList, error) {
	all, err := vs.ObjectVersions(ctx, id) // none: ErrNotFound
	if err != nil {
		return cks.VersionList{}, err
	}
	return versionList(id, all), nil
}

// versionList is the VersionList of object id's versions all, ascending.
func versionList(id int64, all []cks.Version) cks.VersionList {
	l := cks.VersionList{ObjectID: id, Versions: all, Heads: []int64{}}
	if l.Versions == nil {
		l.Versions = []cks.Version{}
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
	return l
}

// ListObjectVersionsOp is list_object_versions.
var ListObjectVersionsOp = define(cks.OpListObjectVersions, &Op[cks.ObjectInput, cks.VersionList]{
	spec: Spec{
		Title:       "List object versions",
		Summary:     `the version DAG {"versions","heads","forked"}; versions are numbered 1, 2, 3 … within each object, and bases, parents and heads are those numbers`,
		Description: "Every version of an object, ascending by number (versions are numbered 1, 2, 3 … within each object; each names its parents, so the list is the version DAG), the numbers of its heads, and whether it is forked.",
		Permission:  auth.PermRead, Resource: objectResource, Surfaces: HTTP | MCP | CLI, Needs: NeedObjects, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.ObjectInput) (cks.VersionList, error) {
		return ListObjectVersions(ctx, s.Objects, in.ObjectID)
	},
})

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
		return &cks.FieldError{Field: "content", Expected: "a JSON object, got " + got}
	}
	return nil
}

// WriteObjectVersion validates and writes content as a version of object
// id based on version base, by author: a base that is not a positive
// integer is a FieldError naming base_version, content that is not a JSON
// object one naming content, an unknown object ErrNotFound; nothing is
// written on error.
func WriteObjectVersion(ctx context.Context, vs *knowledge.Service, id, base int64, content json.RawMessage, author string) (cks.Version, error) {
	if base <= 0 {
		return cks.Version{}, &cks.FieldError{Field: "base_version",
			Expected: fmt.Sprintf("the number of a version of object %d (a positive integer), got %d", id, base)}
	}
	if err := CheckVersionContent(content); err != nil {
		return cks.Version{}, err
	}
	// An unknown object is a 404, not a bad base.
	if _, err := vs.Heads(ctx, id); err != nil {
		return cks.Version{}, err
	}
	return vs.WriteVersion(ctx, id, base, content, author)
}

// WriteObjectVersionOp is write_object_version.
var WriteObjectVersionOp = define(cks.OpWriteObjectVersion, &Op[cks.WriteVersionInput, cks.Version]{
	spec: Spec{
		Title:   "Write object version",
		Summary: "write a version (201); a base that is no longer a head makes a fork",
		Description: "Write a version of an object from a base version, named by its number within the object (201). A base that is no longer a head makes a fork; " +
			"a base that is no version of the object or content that is not a JSON object is an invalid_argument error naming base_version or " +
			"content, an unknown object not_found, and nothing is written.",
		Permission: auth.PermUpdate, Resource: objectResource,
		Status: http.StatusCreated, Surfaces: HTTP | MCP | CLI, Needs: NeedObjects,
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)}, // a version is added, none is replaced
	},
	check: func(in *cks.WriteVersionInput) error {
		if err := CheckVersionContent(in.Content); err != nil {
			return err
		}
		return cks.ValidateJSON("content", in.Content)
	},
	call: func(ctx context.Context, s *Services, in *cks.WriteVersionInput) (cks.Version, error) {
		return WriteObjectVersion(ctx, s.Objects, in.ObjectID, in.BaseVersion, in.Content, actor(ctx))
	},
})

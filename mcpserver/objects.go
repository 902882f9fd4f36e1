package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/store"
)

// Knowledge-store tool names (ADR-007).
const (
	ToolSubmitResearch = "submit_research"
	ToolGetObject      = "get_object"
)

type submitResearchInput struct {
	Question string `json:"question" jsonschema:"the question to research, 1 to 2000 bytes"`
	Corpus   string `json:"corpus,omitempty" jsonschema:"optional: an absolute path, on the host the pipeline runs on, of a directory of .md and .txt files to research instead of the pipeline's default corpus"`
}

type objectIDInput struct {
	ObjectID int64 `json:"object_id" jsonschema:"the object's id"`
}

// AddObjectTools registers the knowledge-store tools on srv: submit_research
// (create on /objects) creates a question for the research pipeline, and
// get_object (read on /objects/{object_id}) shows an object in the shape of
// GET /v1/objects/{id} (api.ObjectView): its transition log, edges, head
// versions with the fork state, and the objects linked to it. Bad input comes back as a tool error naming the
// field.
func AddObjectTools(srv *mcp.Server, k api.ObjectStore) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolSubmitResearch,
		Title: "Submit research question",
		Description: "Submit a question to the cks research pipeline (Researcher → Critic → Synthesizer → Arbiter). " +
			"It creates a question object in status awaiting_research and returns it at once; the pipeline then moves it " +
			"through awaiting_critique, awaiting_synthesis and awaiting_arbitration to resolved (a synthesis with citations) " +
			"or, when it cannot answer within its rounds, needs_input with the reason. Follow it with get_object.",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		OutputSchema: objectSchema[store.Object](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in submitResearchInput) (*mcp.CallToolResult, store.Object, error) {
		if err := auth.Require(ctx, auth.PermCreate, auth.ResourceObjects); err != nil {
			return nil, store.Object{}, err
		}
		n, err := api.NewQuestion(api.ResearchRequest{Question: in.Question, Corpus: in.Corpus}, actorOf(ctx))
		if err != nil {
			return nil, store.Object{}, err
		}
		o, err := k.CreateObject(ctx, n)
		if err != nil {
			return nil, store.Object{}, fmt.Errorf("submit research: %w", err)
		}
		o.ClaimToken = ""
		return nil, o, nil
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolGetObject,
		Title: "Get knowledge object",
		Description: "Show one object of the cks knowledge store (a research question, claim, synthesis, critique or rationale): " +
			"its current_status and round, its append-only transition log (ts, agent, action, transitioned_to, reasoning_node_id), " +
			"its edges (base_type, semantic_type), and under \"reasoning\" every object linked to it, each with its own log and " +
			"edges — for a question its claims (with citations and accepted/rejected status), the critiques (per-claim verdicts), " +
			"the syntheses (answer and citations) and the arbiter's rationales — so the whole chain is in one answer. " +
			"\"heads\" holds the object's head versions (version: its number within the object, parents: numbers of the versions it was written from, author, created_at, content, content_hash); " +
			"\"forked\" is true when there is more than one: concurrent writes from the same base version forked the object, " +
			"and the fork_detection sweeper enqueues a resolve_fork task for the Fork Resolution agent to merge them.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
		OutputSchema: objectSchema[api.ObjectView](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in objectIDInput) (*mcp.CallToolResult, api.ObjectView, error) {
		if err := requireOn(ctx, auth.PermRead, auth.ResourceObjects, fmt.Sprint(in.ObjectID)); err != nil {
			return nil, api.ObjectView{}, err
		}
		if in.ObjectID <= 0 {
			return nil, api.ObjectView{}, &store.FieldError{Field: "object_id", Expected: fmt.Sprintf("a positive integer, got %d", in.ObjectID)}
		}
		v, err := api.ViewObject(ctx, k, in.ObjectID)
		return nil, v, err
	})
}

// objectSchema is the output schema of T with every object's content
// opened to any JSON object.
func objectSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: object schema: %v", err))
	}
	openContent(s)
	return s
}

func openContent(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if name == "content" {
			s.Properties[name] = &jsonschema.Schema{Type: "object", Description: "the object's content, a JSON object"}
			continue
		}
		openContent(p)
	}
	openContent(s.Items)
}

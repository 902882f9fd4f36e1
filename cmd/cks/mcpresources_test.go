package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// readJSON reads uri over cs and decodes its one JSON content into out.
func readJSON(t testing.TB, cs *mcp.ClientSession, uri string, out any) {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || res.Contents[0].URI != uri {
		t.Fatalf("read %s: contents %+v, want one application/json", uri, res.Contents)
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), out); err != nil {
		t.Fatalf("read %s: %v\n%s", uri, err, res.Contents[0].Text)
	}
}

// TestMCPResources reads a real hub's resources with the Go SDK's client,
// over streamable HTTP and through the stdio proxy, on both backends: the
// resources capability is declared; the operator inbox (cks://inbox) lists
// exactly the NEEDS_INPUT task and the stopped list (cks://stopped) exactly
// the STOPPED one; the four templates read a task (cks://tasks/{task_id}), its output, an
// object and its versions as get_task, get_object and list_object_versions
// answer them; an unknown id is "resource not found", and a token without
// read on /objects is refused the object. The prompts are listed and
// work_next_task names the type and the protocol.
func TestMCPResources(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		h := startHub(t, "serve", "--database", db.url)
		op := client.New(h.url, h.token)
		asking, _, err := op.CreateTask(ctx, cks.NewTask{Type: "ask", Title: "which parser?"})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := op.Claim(ctx, "w", []string{"ask"}, 1, time.Minute)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		if _, err := op.MarkRunning(ctx, asking.ID, claimed[0].LeaseToken); err != nil {
			t.Fatal(err)
		}
		if _, err := op.RequestInput(ctx, asking.ID, claimed[0].LeaseToken, "v1 or v2?"); err != nil {
			t.Fatal(err)
		}
		held, _, err := op.CreateTask(ctx, cks.NewTask{Type: "hold", Title: "wait"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.StopTask(ctx, held.ID, client.StopRequest{Reason: "not now"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := op.CreateTask(ctx, cks.NewTask{Type: "other"}); err != nil {
			t.Fatal(err)
		}
		obj, err := op.SubmitResearch(ctx, cks.SubmitResearchInput{Question: "is v2 faster?"})
		if err != nil {
			t.Fatal(err)
		}
		tasksOnly := newToken(t, h, "tasks-reader", cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})

		for _, tr := range mcpTransports {
			t.Run(tr.name, func(t *testing.T) {
				cs := tr.connect(t, h, h.token)
				if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || caps.Prompts == nil {
					t.Fatalf("capabilities %+v: resources and prompts not declared", caps)
				}
				var uris, templates []string
				for r, err := range cs.Resources(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					uris = append(uris, r.URI)
				}
				for rt, err := range cs.ResourceTemplates(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					templates = append(templates, rt.URITemplate)
				}
				if fmt.Sprint(uris) != fmt.Sprint([]string{mcpserver.ResourceInbox, mcpserver.ResourceStopped}) ||
					len(templates) != 4 {
					t.Fatalf("resources %v, templates %v", uris, templates)
				}

				var page struct {
					Tasks []cks.Task `json:"tasks"`
				}
				readJSON(t, cs, mcpserver.ResourceInbox, &page)
				if len(page.Tasks) != 1 || page.Tasks[0].ID != asking.ID || page.Tasks[0].Question != "v1 or v2?" {
					t.Fatalf("inbox: %+v, want only task %d with its question", page.Tasks, asking.ID)
				}
				page.Tasks = nil
				readJSON(t, cs, mcpserver.ResourceStopped, &page)
				if len(page.Tasks) != 1 || page.Tasks[0].ID != held.ID || page.Tasks[0].State != cks.TaskStopped {
					t.Fatalf("stopped: %+v, want only task %d", page.Tasks, held.ID)
				}
				var task cks.Task
				readJSON(t, cs, fmt.Sprintf("cks://tasks/%d", asking.ID), &task)
				if task.ID != asking.ID || task.State != cks.TaskNeedsInput || len(task.Events) == 0 {
					t.Fatalf("task resource: %+v", task)
				}
				var o cks.Object
				readJSON(t, cs, fmt.Sprintf("cks://objects/%d", obj.ID), &o)
				if o.ID != obj.ID {
					t.Fatalf("object resource: %+v, want object %d", o, obj.ID)
				}
				var dag struct {
					Versions []json.RawMessage `json:"versions"`
					Heads    []int             `json:"heads"`
				}
				readJSON(t, cs, fmt.Sprintf("cks://objects/%d/versions", obj.ID), &dag)
				if len(dag.Versions) == 0 || len(dag.Heads) != 1 {
					t.Fatalf("versions resource: %+v", dag)
				}
				for _, uri := range []string{"cks://tasks/999999", "cks://tasks/01", "cks://objects/999999"} {
					_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
					if err == nil || !strings.Contains(strings.ToLower(err.Error()), "not found") {
						t.Errorf("read %s: %v, want resource not found", uri, err)
					}
				}

				var prompts []string
				for p, err := range cs.Prompts(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					prompts = append(prompts, p.Name)
				}
				if fmt.Sprint(prompts) != fmt.Sprint([]string{mcpserver.PromptAnswerInbox, mcpserver.PromptWorkNextTask}) {
					t.Fatalf("prompts %v", prompts)
				}
				got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpserver.PromptWorkNextTask, Arguments: map[string]string{"type": "ask"}})
				if err != nil || len(got.Messages) != 1 {
					t.Fatalf("work_next_task: %+v %v", got, err)
				}
				if txt := got.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(txt, `"ask"`) ||
					!strings.Contains(txt, "touch_task") || !strings.Contains(txt, "complete_task") {
					t.Fatalf("work_next_task text: %q", txt)
				}

				reader := tr.connect(t, h, tasksOnly)
				if _, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: fmt.Sprintf("cks://objects/%d", obj.ID)}); err == nil ||
					!strings.Contains(err.Error(), "forbidden") {
					t.Fatalf("object read without read on /objects: %v, want forbidden", err)
				}
				readJSON(t, reader, mcpserver.ResourceInbox, &page)
			})
		}
	})
}

package mcpserver_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// TestResultsLinkResources (issue 37, finding 9): a tool result that names
// a task or an object carries a resource_link to it (cks://tasks/ID,
// cks://objects/ID) after its text, which resources/read reads; a listing
// carries none.
func TestResultsLinkResources(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	_, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	cs := connectAs(t, sh.url, admin)
	links := func(res *mcp.CallToolResult) []string {
		t.Helper()
		text(t, res) // the text first, then only links
		var uris []string
		for _, c := range res.Content[1:] {
			uris = append(uris, c.(*mcp.ResourceLink).URI)
		}
		return uris
	}
	var created cks.CreatedTask
	res := call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "linked", "title": "x"})
	decode(t, res, &created)
	want := "cks://tasks/" + strconv.FormatInt(created.Task.ID, 10)
	if got := links(res); len(got) != 1 || got[0] != want {
		t.Fatalf("create_task links %v, want [%s]", got, want)
	}
	read, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: want})
	if err != nil || len(read.Contents) != 1 {
		t.Fatalf("reading the link %s: %v %v", want, read, err)
	}
	res = call(t, cs, mcpserver.ToolClaimTasks, map[string]any{"types": "linked", "n": 1, "lease_s": int(time.Hour.Seconds())})
	if got := links(res); len(got) != 1 || got[0] != want {
		t.Fatalf("claim_tasks links %v, want [%s]", got, want)
	}
	var obj cks.Object
	res = call(t, cs, mcpserver.ToolSubmitResearch, map[string]any{"question": "which?"})
	decode(t, res, &obj)
	if got := links(res); len(got) != 1 || got[0] != "cks://objects/"+strconv.FormatInt(obj.ID, 10) {
		t.Fatalf("submit_research links %v", got)
	}
	if got := links(call(t, cs, mcpserver.ToolListTasks, nil)); len(got) != 0 {
		t.Fatalf("list_tasks links %v, want none", got)
	}
}

// TestPromptWithoutArgument (issue 37, finding 9): prompts/get of
// work_next_task without its required type is a JSON-RPC invalid-params
// error (-32602) naming the argument, not code 0.
func TestPromptWithoutArgument(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	_, admin := sh.principal(t, cks.Grant{Resource: auth.ResourceRoot, Permission: auth.PermAdmin})
	cs := connectAs(t, sh.url, admin)
	_, err := cs.GetPrompt(ctx(t), &mcp.GetPromptParams{Name: mcpserver.PromptWorkNextTask})
	rpc, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, `"type" is required`) {
		t.Fatalf("prompts/get without type: %v, want invalid params (-32602) naming type", err)
	}
}

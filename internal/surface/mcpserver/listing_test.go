package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// workerTools are the tools of the executor's protocol on a task.
var workerTools = []string{"mark_running", "touch_task", "add_evidence", "append_output", "record_decision", "reuse_workspace", "report_usage", "confirm_abort",
	"complete_task", "fail_task", "request_input"}

// TestToolsListedByGrants (issue 37, finding 8): tools/list answers the
// tools the caller's grants let it call — a reader of /tasks its six, a
// worker its claim and executor tools, a task's credential its executor
// tools, get_task and create_task (children), an admin all — and with
// ?tools=all every tool, those the caller may not call marked
// cks-dev/callable false. Through the stdio proxy the token's tools are
// listed, and a call of another is the hub's refusal, not an unknown tool.
// It logs the size of the list.
func TestToolsListedByGrants(t *testing.T) {
	sh := newSessionHub(t, mcpserver.HTTPOptions{})
	task, _, err := sh.e.store.Tasks.Enqueue(ctx(t), cks.NewTask{Type: "t", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		grants []cks.Grant
		want   []string
	}{
		{"admin", []cks.Grant{{Resource: auth.ResourceRoot, Permission: auth.PermAdmin}}, nil}, // every tool served
		{"reader of /tasks", []cks.Grant{{Resource: auth.ResourceTasks, Permission: auth.PermRead}},
			[]string{"list_tasks", "task_stats", "list_unclaimed_types", "get_task", "get_output", "get_usage"}},
		{"worker", []cks.Grant{{Resource: auth.ResourceTasks, Permission: auth.PermAppend}},
			append([]string{"claim_tasks"}, workerTools...)},
		{"task credential", auth.TaskTokenGrants(task.ID), append([]string{"get_task", "get_output", "create_task"}, workerTools...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tok := sh.principal(t, tc.grants...)
			listed := func(query string) ([]*mcp.Tool, int) {
				cs, err := newClient().Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: sh.url + "/mcp" + query, MaxRetries: -1,
					HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.ListTools(ctx(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				return res.Tools, len(b)
			}
			tools, size := listed("")
			every, allSize := listed("?tools=all")
			var names, all []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			for _, tl := range every {
				all = append(all, tl.Name)
			}
			slices.Sort(names)
			slices.Sort(all)
			want := slices.Sorted(slices.Values(tc.want))
			if tc.want == nil {
				want = all
			}
			if !slices.Equal(names, want) {
				t.Fatalf("listed %v, want %v", names, want)
			}
			if served := len(mcpserver.Access()) - 4; len(all) != served { // no sweeper tools without sweepers
				t.Fatalf("?tools=all listed %d tools, want the %d this hub serves", len(all), served)
			}
			var callable []string
			for _, tl := range every {
				if v, marked := tl.Meta[mcpserver.CallableMeta]; !marked {
					callable = append(callable, tl.Name)
				} else if v != false {
					t.Errorf("%s marked %s %v", tl.Name, mcpserver.CallableMeta, v)
				}
			}
			slices.Sort(callable)
			if !slices.Equal(callable, want) {
				t.Fatalf("?tools=all: unmarked %v, want %v", callable, want)
			}
			t.Logf("tools/list: %d tools, %d bytes (?tools=all: %d tools, %d bytes)", len(tools), size, len(every), allSize)
		})
	}

	_, reader := sh.principal(t, cks.Grant{Resource: auth.ResourceTasks, Permission: auth.PermRead})
	cs, _ := proxied(t, sh.url, reader)
	res, err := cs.ListTools(ctx(t), nil)
	if err != nil || len(res.Tools) != 6 {
		t.Fatalf("the proxy lists %d tools (%v), want the reader's 6", len(res.Tools), err)
	}
	refused := call(t, cs, mcpserver.ToolCreateTask, map[string]any{"type": "t"})
	if msg := toolText(t, refused); !refused.IsError || !strings.Contains(msg, "forbidden") {
		t.Fatalf("create_task through the proxy by a reader: %q, want the hub's forbidden", msg)
	}
}

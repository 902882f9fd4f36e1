package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/client"
)

// TestDesktopConfig starts cks mcp exactly as examples/desktop-mcp's
// claude_desktop_config.json tells a desktop client to — its command (this
// binary in place of /usr/local/bin/cks), its args with the hub's URL in
// place of the default one, its env with a real token, in a working
// directory with no .cks of its own, as a desktop client starts it — and
// works through it with the Go SDK's client: the hub's tools are listed and
// a task created through it is the hub's.
func TestDesktopConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "desktop-mcp", "claude_desktop_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("claude_desktop_config.json: %v", err)
	}
	srv, ok := cfg.MCPServers["cks"]
	if !ok || filepath.Base(srv.Command) != "cks" || len(srv.Args) == 0 || srv.Args[0] != "mcp" {
		t.Fatalf("claude_desktop_config.json: %+v, want a cks server starting `cks mcp`", cfg.MCPServers)
	}
	forBackends(t, func(t *testing.T, db testDB) { desktopConfig(t, db, srv.Args, srv.Env) })
}

func desktopConfig(t *testing.T, db testDB, srvArgs []string, env map[string]string) {
	h := startHub(t, "serve", "--database", db.url)
	args := make([]string, len(srvArgs))
	for i, a := range srvArgs {
		args[i] = strings.Replace(a, "http://127.0.0.1:7433", h.url, 1)
	}
	cmd := exec.Command(cksBin, args...)
	cmd.Dir = t.TempDir() // a desktop client's own directory: no .cks here
	cmd.Env = cleanEnv()
	for k, v := range env {
		if k == "CKS_TOKEN" {
			v = h.token
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cks mcp stderr:\n%s", stderr.String())
		}
	})
	cs := connectMCP(t, &mcp.CommandTransport{Command: cmd})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list through the configured proxy: %v, %d tools", err, len(res.Tools))
	}
	var created struct {
		Task struct {
			ID int64 `json:"task_id"`
		} `json:"task"`
	}
	useTool(t, cs, "create_task", map[string]any{"type": "desktop", "title": "from the desktop"}, &created)
	var got struct {
		Title string `json:"title"`
	}
	useTool(t, cs, "get_task", map[string]any{"task_id": created.Task.ID}, &got)
	if got.Title != "from the desktop" {
		t.Fatalf("get_task through the proxy: %+v", got)
	}
	if hubs, err := client.New(h.url, h.token).GetTask(context.Background(), created.Task.ID); err != nil || hubs.Title != got.Title {
		t.Fatalf("the hub's task %d: %+v, %v", created.Task.ID, hubs, err)
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, ".cks")); !os.IsNotExist(err) {
		t.Fatalf("cks mcp made a .cks in the client's directory (%v)", err)
	}
}

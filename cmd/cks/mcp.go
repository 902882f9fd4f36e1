package main

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/hub"
	"github.com/cks-dev/cks/mcpserver"
	"github.com/cks-dev/cks/ops"
)

// cmdMCP serves the MCP tools over stdio for desktop LLM clients. Like the
// seed's MCP server it is a node of its own: its own store connection and its
// own Runtime, whose sweepers list_agents/start_agent/stop_agent control.
// Logs go to stderr: stdout carries the protocol.
func cmdMCP(ctx context.Context, args []string, e env) error {
	fs := flagSet("mcp", e)
	var sf storeFlags
	sf.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: mcp takes no arguments, got %q", errUsage, pos)
	}
	settings, err := hub.ParseSettings(e.getenv)
	if err != nil {
		return err
	}
	_, dbURL := sf.resolve(e)
	st, err := backend.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	log := logger(e.stderr)
	rt, err := hub.NewRuntime(st, hub.RuntimeConfig{Logger: log, Settings: settings})
	if err != nil {
		return err
	}
	if err := rt.Start(ctx); err != nil {
		return err
	}
	defer rt.Stop(context.Background())
	srv := mcpserver.NewServer(version, &ops.Services{Liveness: rt.Liveness, Tasks: st.Tasks, Objects: st.Objects,
		Sweepers: rt.Sweepers, Principals: st.Principals, Bus: rt.Bus, Logger: log})
	log.Info("mcp serving on stdio", "backend", st.Dialect())
	return mcpserver.ServeStdio(ctx, srv)
}

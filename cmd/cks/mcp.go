package main

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/mcpserver"
	"github.com/cks-dev/cks/store/backend"
)

// cmdMCP serves the MCP tools over stdio, on its own store connection, for
// desktop LLM clients. Logs go to stderr: stdout carries the protocol.
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
	_, dbURL := sf.resolve(e)
	st, err := backend.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	logger(e.stderr).Info("mcp serving on stdio", "backend", st.Backend())
	srv := mcpserver.New(liveness.NewService(st, clock.System{}), version)
	mcpserver.AddTaskTools(srv, st)
	return mcpserver.ServeStdio(ctx, srv)
}

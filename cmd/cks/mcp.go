package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// cmdMCP serves MCP over stdio for desktop LLM clients. It is a client of a
// hub, found as every client command finds it (--url and --token,
// CKS_URL and CKS_TOKEN, else the data directory's hub.url and admin
// token): it relays the hub's tools and every call to the hub's /mcp with
// that token (mcpserver.Proxy), so the tools act on the hub's state with the
// token's permissions; it lists the tools the token may call (--all-tools:
// every one). No hub is an error at start saying how to point at one, a hub
// that answers an error one quoting it (exit 1). The session with the hub
// is opened again whenever the hub ends it, so the process may live as long
// as its desktop client.
//
// --embedded serves the tools from the database itself instead, as the
// local operator (admin), for a machine with no hub: no sweeper runs and the
// sweeper tools are left out, so it never competes with a hub's sweepers
// on a shared database.
//
// Logs go to stderr: stdout carries the protocol.
func cmdMCP(ctx context.Context, args []string, e env) error {
	fs := flagSet("mcp", e)
	var cf clientFlags
	// The client commands' flags, but --json: mcp prints no listing.
	all := flag.NewFlagSet("mcp", flag.ContinueOnError)
	cf.register(all)
	all.VisitAll(func(f *flag.Flag) {
		if f.Name != "json" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	embedded := fs.Bool("embedded", false, "serve from the database itself, without a hub: no sweepers, no sweeper tools")
	database := fs.String("database", "", "with --embedded: database URL (env CKS_DATABASE_URL; default the data directory's cks.db)")
	allTools := fs.Bool("all-tools", false, "list every tool of the hub, not only those the token may call")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: mcp takes no arguments, got %q", errUsage, pos)
	}
	if *embedded {
		if flagGiven(fs, "url", "token", "all-tools") {
			return fmt.Errorf("%w: mcp --embedded serves from the database, not a hub, as the local operator: drop --url, --token and --all-tools", errUsage)
		}
		loc := e.common()
		dir := datadir.Dir(or(cf.dataDir, loc.DataDir, datadir.Default))
		return mcpEmbedded(ctx, e, or(*database, loc.DatabaseURL, dir.DatabaseURL()))
	}
	if flagGiven(fs, "database") {
		return fmt.Errorf("%w: mcp relays to a hub, which has the database: --database goes with --embedded", errUsage)
	}
	c, err := cf.client(e)
	if err != nil {
		return fmt.Errorf("mcp is a client of a hub (--embedded serves from the database without one): %w", err)
	}
	log := logger(e.stderr)
	p, err := mcpserver.NewProxy(ctx, mcpserver.ProxyConfig{URL: c.BaseURL(), Token: c.Token(), Version: version, Logger: log,
		AllTools: *allTools})
	if err != nil {
		return err
	}
	defer p.Close()
	return p.ServeStdio(ctx)
}

// flagGiven reports whether any of the flags names was given.
func flagGiven(fs *flag.FlagSet, names ...string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			given = given || f.Name == n
		}
	})
	return given
}

// mcpEmbedded serves the MCP tools over stdio from the database at dbURL,
// with no hub: the table's operations over the store's services, except the
// sweepers'.
func mcpEmbedded(ctx context.Context, e env, dbURL string) error {
	st, err := openBackend(ctx, dbURL, e)
	if err != nil {
		return err
	}
	defer st.Close()
	log := logger(e.stderr)
	srv := mcpserver.NewServer(version, &ops.Services{Liveness: liveness.NewService(st.Driver(), st.Clock()),
		Tasks: st.Tasks, Objects: st.Objects, Principals: st.Principals, Schedules: st.Schedules, Logger: log})
	log.Info("mcp serving on stdio from the database, without a hub (--embedded): no sweepers run", "backend", st.Dialect())
	return mcpserver.ServeStdio(ctx, srv)
}

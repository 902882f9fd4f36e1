package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// hubServer is a hub's HTTP surface served in this process over one
// backend: the api handler (every operation of the table, behind token
// authentication) with the MCP endpoint at /mcp, on a real net/http server
// at 127.0.0.1 on a port the OS chose. It is what `cks serve` serves (hub.Run)
// without the sweepers and the studio, which would add work of their own to
// the accounting.
type hubServer struct {
	url string
	srv *http.Server
	mcp *mcpserver.HTTP
	// served is Serve's error, once it returns.
	served chan error
	// requests counts the requests served (the MCP endpoint's included):
	// what a hub path costs in round trips.
	requests atomic.Int64
}

// startHub serves st's services at 127.0.0.1.
func startHub(st *backend.Backend) (*hubServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("peers: hub listener: %w", err)
	}
	log := slog.New(slog.DiscardHandler)
	c := st.Clock()
	svc := &ops.Services{Liveness: liveness.NewService(st.Driver(), c), Tasks: st.Tasks, Objects: st.Objects,
		Principals: st.Principals, Clock: c, Logger: log}
	h := &hubServer{url: "http://" + ln.Addr().String(), served: make(chan error, 1),
		mcp: mcpserver.NewHTTP(mcpserver.NewServer("peers", svc), mcpserver.HTTPOptions{})}
	a := api.New(api.Config{Services: svc, MCP: h.mcp, Logger: log, Version: "peers", Health: st.StorageHealth})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		a.ServeHTTP(w, r)
	})
	h.srv = &http.Server{Handler: counted, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	h.srv.RegisterOnShutdown(a.CloseStreams)
	h.srv.RegisterOnShutdown(h.mcp.Close)
	go func() { h.served <- h.srv.Serve(ln) }()
	return h, nil
}

// close shuts the server down (its MCP sessions and streams first).
func (h *hubServer) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err != nil {
		h.srv.Close()
	}
	if serr := <-h.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// agentTokens creates n principals as an admin does for its agents (`cks
// token create`), each holding read and append on /tasks (what the worker
// protocol needs, as TestMCPWorkerProtocol's worker holds), and returns
// their tokens.
func agentTokens(ctx context.Context, st *backend.Backend, n int) ([]string, error) {
	grants := []cks.Grant{{Resource: auth.ResourceTasks, Permission: auth.PermRead},
		{Resource: auth.ResourceTasks, Permission: auth.PermAppend}}
	toks := make([]string, n)
	for i := range toks {
		_, tok, err := auth.CreateToken(ctx, st.Principals, st.Clock(), fmt.Sprintf("peers-agent-%d", i), grants)
		if err != nil {
			return nil, fmt.Errorf("peers: agent token: %w", err)
		}
		toks[i] = tok
	}
	return toks, nil
}

// agentConn is one remote agent's connection to the hub: how it claims,
// and the executor calls worker.Executor makes through it.
type agentConn interface {
	worker.Store
	claim(ctx context.Context, name string, lease time.Duration) ([]cks.ClaimedTask, error)
	close() error
}

// httpTransport is an HTTP transport of one agent's own, as each agent
// process has: the default transport keeps two idle connections per host,
// and 64 agents in one process sharing it would open a connection per
// request.
func httpTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4
	return t
}

// httpAgent works through the hub's HTTP executor API with the Go client,
// as a program built on package client does.
type httpAgent struct {
	*client.Client
	transport *http.Transport
}

func newHTTPAgent(url, token string) *httpAgent {
	t := httpTransport()
	return &httpAgent{Client: client.NewWithHTTP(url, token, &http.Client{Transport: t, Timeout: 30 * time.Second}), transport: t}
}

// claim claims straight into RUNNING (running): the executor starts at
// once, so it makes no mark_running request.
func (a *httpAgent) claim(ctx context.Context, name string, lease time.Duration) ([]cks.ClaimedTask, error) {
	out, err := a.ClaimWith(ctx, cks.ClaimTasksInput{Worker: name, Types: cks.Names{cksType}, N: 1, LeaseS: lease.Seconds(), Running: true})
	return out.Tasks, err
}

// Heartbeat is touch_task's whole answer (the client's Touch keeps only
// whether the lease is held).
func (a *httpAgent) Heartbeat(ctx context.Context, id int64, leaseToken string) (cks.TouchResult, error) {
	return client.Do(ctx, a.Client, cks.OpTouchTask, leaseIn(id, leaseToken))
}

// LeaseHeld asks by a heartbeat: the HTTP API has no separate read of the
// lease (the executor asks only when it watches for aborts, which a remote
// agent learns of from its heartbeat).
func (a *httpAgent) LeaseHeld(ctx context.Context, id int64, leaseToken string) (bool, error) {
	return a.Touch(ctx, id, leaseToken)
}

func (a *httpAgent) close() error { a.transport.CloseIdleConnections(); return nil }

// mcpAgent works through the hub's MCP tools over streamable HTTP, one
// session per agent, as an MCP client (a model's tool calls) does: the
// worker protocol of ops.WorkerProtocol.
type mcpAgent struct {
	cs        *mcp.ClientSession
	transport *http.Transport
}

// bearerRoundTripper adds the agent's token to every request of its session.
type bearerRoundTripper struct {
	token string
	next  http.RoundTripper
}

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func newMCPAgent(ctx context.Context, url, token, name string) (*mcpAgent, error) {
	t := httpTransport()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "peers"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerRoundTripper{token: token, next: t}}}, nil)
	if err != nil {
		return nil, fmt.Errorf("peers: mcp connect: %w", err)
	}
	return &mcpAgent{cs: cs, transport: t}, nil
}

func (a *mcpAgent) close() error {
	err := a.cs.Close()
	a.transport.CloseIdleConnections()
	return err
}

// errTool is a tool's error answer.
var errTool = errors.New("tool error")

// callTool calls e's tool with in and decodes its structured answer.
func callTool[In, Out any](ctx context.Context, cs *mcp.ClientSession, e cks.Endpoint[In, Out], in In) (Out, error) {
	var out Out
	name := e.Route().Name
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: in})
	if err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return out, fmt.Errorf("%s: %w: %s", name, errTool, text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return out, fmt.Errorf("%s: decode the answer: %w", name, err)
	}
	return out, nil
}

func leaseIn(id int64, token string) cks.LeaseInput {
	return cks.LeaseInput{TaskID: id, LeaseToken: token}
}

// claim claims straight into RUNNING, as the HTTP agent does.
func (a *mcpAgent) claim(ctx context.Context, name string, lease time.Duration) ([]cks.ClaimedTask, error) {
	out, err := callTool(ctx, a.cs, cks.OpClaimTasks, cks.ClaimTasksInput{Worker: name, Types: cks.Names{cksType}, N: 1, LeaseS: lease.Seconds(),
		Running: true})
	return out.Tasks, err
}

func (a *mcpAgent) MarkRunning(ctx context.Context, id int64, leaseToken string) (cks.Task, error) {
	return callTool(ctx, a.cs, cks.OpMarkRunning, leaseIn(id, leaseToken))
}

func (a *mcpAgent) Heartbeat(ctx context.Context, id int64, leaseToken string) (cks.TouchResult, error) {
	return callTool(ctx, a.cs, cks.OpTouchTask, leaseIn(id, leaseToken))
}

func (a *mcpAgent) LeaseHeld(ctx context.Context, id int64, leaseToken string) (bool, error) {
	out, err := a.Heartbeat(ctx, id, leaseToken)
	return out.Held, err
}

func (a *mcpAgent) Complete(ctx context.Context, id int64, leaseToken string, needsReview bool, result string) (cks.Task, error) {
	return callTool(ctx, a.cs, cks.OpCompleteTask, cks.CompleteTaskInput{LeaseInput: leaseIn(id, leaseToken), NeedsReview: needsReview, Result: result})
}

func (a *mcpAgent) Fail(ctx context.Context, id int64, leaseToken string, retryable bool, reason string) (cks.Task, error) {
	return callTool(ctx, a.cs, cks.OpFailTask, cks.FailTaskInput{LeaseInput: leaseIn(id, leaseToken), Retryable: retryable, Reason: reason})
}

func (a *mcpAgent) AddEvidence(ctx context.Context, id int64, leaseToken, kind, body string) (cks.Evidence, error) {
	return callTool(ctx, a.cs, cks.OpAddEvidence, cks.AddEvidenceInput{LeaseInput: leaseIn(id, leaseToken), Kind: kind, Body: body})
}

func (a *mcpAgent) RecordDecision(ctx context.Context, id int64, leaseToken, kind, text string, rev int) (cks.Decision, error) {
	return callTool(ctx, a.cs, cks.OpRecordDecision, cks.RecordDecisionInput{LeaseInput: leaseIn(id, leaseToken), Kind: kind, Text: text,
		DerivedFromRevision: rev})
}

func (a *mcpAgent) ReuseWorkspace(ctx context.Context, id int64, leaseToken, path string, rev int) (cks.Decision, error) {
	return callTool(ctx, a.cs, cks.OpReuseWorkspace, cks.ReuseWorkspaceInput{LeaseInput: leaseIn(id, leaseToken), Path: path,
		DerivedFromRevision: rev})
}

func (a *mcpAgent) ReportUsage(ctx context.Context, id int64, leaseToken string, u cks.UsageInput) (cks.UsageReport, error) {
	return callTool(ctx, a.cs, cks.OpReportUsage, cks.ReportUsageInput{LeaseInput: leaseIn(id, leaseToken), Model: u.Model,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost.String()})
}

func (a *mcpAgent) ConfirmAbort(ctx context.Context, id int64, leaseToken string) (cks.Abort, error) {
	return callTool(ctx, a.cs, cks.OpConfirmAbort, leaseIn(id, leaseToken))
}

func (a *mcpAgent) GetTask(ctx context.Context, id int64) (cks.Task, error) {
	return callTool(ctx, a.cs, cks.OpGetTask, cks.TaskInput{TaskID: id})
}

// remoteAgents are the agents of one hub-path run, connected (their
// tokens created, MCP sessions opened) before the measurement starts.
type remoteAgents struct {
	hub   *hubServer
	conns []agentConn
}

// connectAgents starts the hub over st and connects workers agents of
// system (SystemCksHTTP or SystemCksMCP) to it, each with a token of its own.
func connectAgents(ctx context.Context, st *backend.Backend, system string, workers int) (*remoteAgents, error) {
	toks, err := agentTokens(ctx, st, workers)
	if err != nil {
		return nil, err
	}
	h, err := startHub(st)
	if err != nil {
		return nil, err
	}
	ra := &remoteAgents{hub: h}
	for i, tok := range toks {
		var c agentConn
		if system == SystemCksMCP {
			c, err = newMCPAgent(ctx, h.url, tok, fmt.Sprintf("peers-agent-%d", i))
		} else {
			c = newHTTPAgent(h.url, tok)
		}
		if err != nil {
			return nil, errors.Join(err, ra.close(ctx))
		}
		ra.conns = append(ra.conns, c)
	}
	return ra, nil
}

// close disconnects the agents and stops the hub.
func (ra *remoteAgents) close(ctx context.Context) error {
	var err error
	for _, c := range ra.conns {
		err = errors.Join(err, c.close())
	}
	return errors.Join(err, ra.hub.close(ctx))
}

// remoteThroughput enqueues jobs as the other cks runs do (in process,
// EnqueueMany), then runs one loop per connected agent, each as a remote
// `cks agent` works: claim one task through the hub straight into RUNNING,
// run it through worker.Executor over the same connection (the lease
// heartbeat beside a no-op resolver, complete it, every call fenced by the
// lease token), until no task is left: two requests per task. With a.touches the resolver renews
// the lease that many times (touch_task) before it returns, as the
// executor's heartbeat would over a longer task.
func remoteThroughput(ctx context.Context, st *backend.Backend, ra *remoteAgents, jobs, priorities int, a agentSettings,
	progress func(string, int, int)) (enqueue, work time.Duration, err error) {
	enqueue, err = enqueueCks(ctx, st, jobs, priorities, progress)
	if err != nil {
		return 0, 0, err
	}
	noop := func(context.Context, *worker.Attempt) (worker.Result, error) { return worker.Result{Output: "ok"}, nil }
	work, err = workAll(ctx, jobs, len(ra.conns), progress, func(ctx context.Context, w int, completed func(int64, worker.Report) error) error {
		conn := ra.conns[w]
		name := fmt.Sprintf("peers-agent-%d", w)
		ex := worker.New(conn, worker.Options{Heartbeat: a.lease / 3})
		for {
			ts, err := conn.claim(ctx, name, a.lease)
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			if len(ts) == 0 {
				return nil
			}
			c := ts[0]
			rep, err := ex.Run(ctx, c, func(ctx context.Context, at *worker.Attempt) (worker.Result, error) {
				// Heartbeats a longer task would send meanwhile.
				for range a.touches {
					if res, err := conn.Heartbeat(ctx, c.ID, c.LeaseToken); err != nil || !res.Held {
						return worker.Result{}, fmt.Errorf("touch: held %v: %w", res.Held, err)
					}
				}
				return noop(ctx, at)
			})
			if err != nil {
				return fmt.Errorf("run task %d: %w", ts[0].ID, err)
			}
			if err := completed(ts[0].ID, rep); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return enqueue, 0, fmt.Errorf("peers: remote agents: %w", err)
	}
	return enqueue, work, nil
}

package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio proxy (`cks mcp`): a desktop MCP client starts a process and
// talks to it over stdin/stdout; that process is a client of a hub. It
// relays the hub's tools — their names, descriptions, schemas and
// annotations as the hub lists them, and the hub's instructions — and every
// call, through one SDK client session to the hub's /mcp authenticated with
// the caller's bearer token. So each tool acts on the hub's state with that
// token's permissions, and answers exactly as the hub does: a refusal is the
// hub's tool error, word for word. Its resources, prompts and resource
// subscriptions are the hub's too: the proxy holds each subscribed URI once
// on its session with the hub and relays the hub's notifications. Nothing
// runs beside the hub: no store, no sweeper, no change listener.

// ProxyConfig is the hub a Proxy relays to.
type ProxyConfig struct {
	// URL is the hub's base URL (http://HOST:PORT); its MCP endpoint is
	// URL/mcp.
	URL string
	// Token is the bearer token every request carries.
	Token string
	// Version is the proxy's own (the cks binary's).
	Version string
	// Transport sends the HTTP requests (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// Logger receives what the proxy has to say (nil: slog.Default());
	// never a token, an argument or an answer.
	Logger *slog.Logger
}

// ErrHubUnreachable is the error of a proxy that cannot reach its hub;
// ErrHubRefused that of one whose token the hub does not take.
var (
	ErrHubUnreachable = errors.New("hub unreachable")
	ErrHubRefused     = errors.New("hub refused the token")
)

// Proxy is an MCP server relaying a hub's tools (the stdio proxy).
type Proxy struct {
	cfg      ProxyConfig
	endpoint string
	http     *http.Client
	refusals *refusals
	srv      *mcp.Server

	mu   sync.Mutex
	hub  *mcp.ClientSession                     // nil after a transport failure, until the next call dials again
	subs map[string]map[*mcp.ServerSession]bool // the URIs the proxy's clients subscribed to, held at the hub
}

// NewProxy connects to the hub of cfg, reads its tools and returns the proxy
// serving them. A hub that does not answer is an error wrapping
// ErrHubUnreachable, one that refuses the token an error wrapping
// ErrHubRefused; both say what was tried.
func NewProxy(ctx context.Context, cfg ProxyConfig) (*Proxy, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	ref := &refusals{}
	p := &Proxy{cfg: cfg, endpoint: strings.TrimRight(cfg.URL, "/") + "/mcp", refusals: ref,
		http: &http.Client{Transport: &bearerTransport{token: cfg.Token, base: base, refusals: ref}},
		subs: map[string]map[*mcp.ServerSession]bool{}}
	hub, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	init := hub.InitializeResult()
	impl := &mcp.Implementation{Name: "cks", Title: "cks (stdio, proxy to " + p.endpoint + ")", Version: cfg.Version}
	opts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}, Instructions: init.Instructions}
	if c := init.Capabilities; c != nil && c.Resources != nil && c.Resources.Subscribe {
		// Subscriptions only where the hub offers them.
		opts.SubscribeHandler, opts.UnsubscribeHandler = p.subscribe, p.unsubscribe
	}
	p.srv = mcp.NewServer(impl, opts)
	n := 0
	for tool, err := range hub.Tools(ctx, nil) {
		if err != nil {
			hub.Close()
			return nil, fmt.Errorf("listing the tools of the hub at %s: %w", p.endpoint, err)
		}
		p.srv.AddTool(tool, p.relay)
		n++
	}
	if err := p.relayResources(ctx, hub, init.Capabilities); err != nil {
		hub.Close()
		return nil, fmt.Errorf("listing the resources and prompts of the hub at %s: %w", p.endpoint, err)
	}
	p.hub = hub
	if hi := init.ServerInfo; hi != nil {
		cfg.Logger.Info("mcp proxy relaying the hub's tools", "hub", p.endpoint, "hub_version", hi.Version, "tools", n)
	}
	return p, nil
}

// Server is the proxy's MCP server.
func (p *Proxy) Server() *mcp.Server { return p.srv }

// ServeStdio serves the proxy to one client over stdin/stdout until ctx
// ends or the client disconnects (both return nil). Nothing else may write
// to stdout meanwhile.
func (p *Proxy) ServeStdio(ctx context.Context) error {
	return serve(ctx, p.srv, &mcp.StdioTransport{})
}

// Close ends the session with the hub.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hub == nil {
		return nil
	}
	err := p.hub.Close()
	p.hub = nil
	return err
}

// hubProtocol is the protocol version the proxy speaks to the hub: the
// last one with sessions, whose resources/subscribe is answered once the
// hub holds the subscription (the session-less protocol's is not), and
// whose notifications come on the session's GET stream.
const hubProtocol = "2025-11-25"

// dial opens a session with the hub, subscribed to what the proxy's
// clients are subscribed to (a session dialled again after a failure
// subscribes again).
func (p *Proxy) dial(ctx context.Context) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "cks-mcp-proxy", Version: p.cfg.Version}, &mcp.ClientOptions{
		ResourceUpdatedHandler: p.updated})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.endpoint, HTTPClient: p.http, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: hubProtocol})
	if err != nil {
		return nil, p.failure(err)
	}
	for uri := range p.subs { // under p.mu, but for the first dial
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			p.cfg.Logger.Warn("mcp proxy: subscribing again at the hub", "hub", p.endpoint, "uri", uri, "err", err)
		}
	}
	return cs, nil
}

// updated relays the hub's notifications/resources/updated to the proxy's
// subscribed clients.
func (p *Proxy) updated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p.srv == nil || req.Params == nil {
		return
	}
	if err := p.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: req.Params.URI}); err != nil {
		p.cfg.Logger.Warn("mcp proxy: relaying a resource update", "uri", req.Params.URI, "err", err)
	}
}

// subscribe relays a resources/subscribe: the hub subscribes the proxy's
// session to the URI (refusing one that does not exist or that the token
// may not read, as the hub words it), once however many clients hold it.
func (p *Proxy) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	cs, err := p.session(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	held := len(p.subs[uri]) > 0
	p.mu.Unlock()
	if !held {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			return p.relayed(ctx, cs, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs[uri] == nil {
		p.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	p.subs[uri][req.Session] = true
	return nil
}

// unsubscribe relays a resources/unsubscribe once no client holds the URI.
func (p *Proxy) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	p.mu.Lock()
	delete(p.subs[uri], req.Session)
	last := len(p.subs[uri]) == 0
	if last {
		delete(p.subs, uri)
	}
	cs := p.hub
	p.mu.Unlock()
	if !last || cs == nil {
		return nil
	}
	return p.relayed(ctx, cs, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}))
}

// failure says why a request to the hub failed: the token refused (the
// hub's own words), or the hub not answering.
func (p *Proxy) failure(err error) error {
	if msg, ok := p.refusals.take(); ok {
		if strings.HasPrefix(msg, strconv.Itoa(http.StatusServiceUnavailable)) {
			return fmt.Errorf("%w: the hub at %s answered %s; try again shortly", ErrHubUnreachable, p.endpoint, msg)
		}
		return fmt.Errorf("%w: the hub at %s answered %s; pass a token it takes with --token or CKS_TOKEN", ErrHubRefused, p.endpoint, msg)
	}
	return fmt.Errorf("%w: the MCP endpoint %s did not answer (%v); start a hub (`cks serve` or `cks dev`) or point at one "+
		"with --url or CKS_URL", ErrHubUnreachable, p.endpoint, err)
}

// session returns the session with the hub, dialling again after a
// failure.
func (p *Proxy) session(ctx context.Context) (*mcp.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hub != nil {
		return p.hub, nil
	}
	cs, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	p.hub = cs
	return cs, nil
}

// drop forgets cs after a transport failure, so the next call dials again
// (a client connection that failed stays failed).
func (p *Proxy) drop(cs *mcp.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hub == cs {
		p.hub = nil
		cs.Close()
	}
}

// relay is every tool's handler: the call, as the client sent it, to the
// hub, and the hub's answer, as it is, back. A JSON-RPC error of the hub
// goes back as itself; a hub that cannot be reached, or that refuses the
// token, is a tool error saying so (the call may have reached the hub before
// its answer was lost: a model must read the state again).
func (p *Proxy) relay(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cs, err := p.session(ctx)
	if err != nil {
		return failed(err), nil
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
	if rpc, ok := errors.AsType[*jsonrpc.Error](err); ok && !clientSide[rpc.Code] {
		return nil, rpc
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.drop(cs)
		p.cfg.Logger.Warn("mcp proxy: a call to the hub failed", "hub", p.endpoint, "tool", req.Params.Name, "err", err)
		return failed(fmt.Errorf("%w (the call may or may not have reached the hub: read the state again before repeating it)",
			p.failure(err))), nil
	}
	return res, nil
}

// clientSide are the codes of the JSON-RPC errors the SDK's client makes up
// itself, for a request that never got an answer (its jsonrpc2 extensions:
// unknown, client closing, server closing, rejected by the transport): a
// failure to reach the hub, not the hub's answer.
var clientSide = map[int64]bool{-32001: true, -32003: true, -32004: true, -32005: true}

// failed is err as a tool error.
func failed(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// bearerTransport sends every request with the bearer token and notes the
// hub's refusals of it.
type bearerTransport struct {
	token    string
	base     http.RoundTripper
	refusals *refusals
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.base.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusServiceUnavailable) {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		b.refusals.note(resp.Status, body)
	}
	return resp, err
}

// refusals holds the last refusal the hub answered: of the token (a 401),
// or for its database (a 503).
type refusals struct {
	mu   sync.Mutex
	last string
}

// note records a 401 or 503 with its body: the hub's
// {"error":{"message"}}, when it is one.
func (r *refusals) note(status string, body []byte) {
	msg := status
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg += " (" + e.Error.Message + ")"
	}
	r.mu.Lock()
	r.last = msg
	r.mu.Unlock()
}

// take returns the refusal noted since the last take, if any.
func (r *refusals) take() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := r.last
	r.last = ""
	return msg, msg != ""
}

// relayResources adds the hub's resources, resource templates and prompts
// (those its capabilities declare) to the proxy, each read or got from the
// hub as the client asked.
func (p *Proxy) relayResources(ctx context.Context, hub *mcp.ClientSession, caps *mcp.ServerCapabilities) error {
	if caps == nil {
		return nil
	}
	if caps.Resources != nil {
		for r, err := range hub.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			p.srv.AddResource(r, p.read)
		}
		for t, err := range hub.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			p.srv.AddResourceTemplate(t, p.read)
		}
	}
	if caps.Prompts != nil {
		for pr, err := range hub.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			p.srv.AddPrompt(pr, p.prompt)
		}
	}
	return nil
}

// read relays a resources/read to the hub; the hub's JSON-RPC error (a
// resource not found) goes back as itself.
func (p *Proxy) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	cs, err := p.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
	return res, p.relayed(ctx, cs, err)
}

// relayed is the error of a relayed request: the hub's JSON-RPC error as
// itself, a failure to reach the hub (the session dropped, to dial again)
// as what p.failure says.
func (p *Proxy) relayed(ctx context.Context, cs *mcp.ClientSession, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*jsonrpc.Error](err); !ok && ctx.Err() == nil {
		p.drop(cs)
		return p.failure(err)
	}
	return err
}

// prompt relays a prompts/get to the hub.
func (p *Proxy) prompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	cs, err := p.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
	return res, p.relayed(ctx, cs, err)
}

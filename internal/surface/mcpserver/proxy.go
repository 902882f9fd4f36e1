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
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio proxy (`cks mcp`): a desktop MCP client starts a process and
// talks to it over stdin/stdout; that process is a client of a hub. It
// relays the hub's tools — their names, descriptions, schemas and
// annotations as the hub lists them for the token, and the hub's
// instructions — and every call, through one SDK client session to the
// hub's /mcp authenticated with the caller's bearer token. So each tool acts
// on the hub's state with that token's permissions, and answers exactly as
// the hub does: a refusal is the hub's tool error, word for word, and a
// request the hub refuses whole (413, 503, …) is a tool error quoting the
// hub's status, code and message. Its resources, prompts and resource
// subscriptions are the hub's too: the proxy holds each subscribed URI once
// on its session with the hub and relays the hub's notifications, progress
// included. Nothing runs beside the hub: no store, no sweeper, no change
// listener.
//
// The session with the hub outlives anything the hub does to it: once the
// hub answers 404 (the session ended: idle past its timeout, closed to make
// room, or the hub restarted), the proxy opens a new one, subscribes it to
// what its clients hold, and sends the request again — the hub did nothing
// with it. A hub that will not open a session is spoken to in the
// session-less protocol (each request on its own). So a desktop client idle
// for a day calls on as if it never paused.

// ProxyConfig is the hub a Proxy relays to.
type ProxyConfig struct {
	// URL is the hub's base URL (http://HOST:PORT); its MCP endpoint is
	// URL/mcp.
	URL string
	// Token is the bearer token every request carries.
	Token string
	// Version is the proxy's own (the cks binary's).
	Version string
	// AllTools lists every tool of the hub, not only those the token may
	// call (/mcp?tools=all).
	AllTools bool
	// Transport sends the HTTP requests (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// Logger receives what the proxy has to say (nil: slog.Default());
	// never a token, an argument or an answer.
	Logger *slog.Logger
}

// ErrHubUnreachable is the error of a proxy that cannot reach its hub;
// ErrHubRefused that of one whose token the hub does not take. A hub that
// answers a request with another error is a *HubError.
var (
	ErrHubUnreachable = errors.New("hub unreachable")
	ErrHubRefused     = errors.New("hub refused the token")
)

// HubError is a request the hub answered with an HTTP error: its status
// and the hub's own error code and message.
type HubError struct {
	Endpoint string
	Status   int
	Code     string
	Message  string
}

func (e *HubError) Error() string {
	what := fmt.Sprint(e.Status)
	if t := http.StatusText(e.Status); t != "" {
		what += " " + t
	}
	if e.Code != "" {
		what += " " + e.Code
	}
	if e.Message == "" {
		return fmt.Sprintf("the hub at %s answered %s", e.Endpoint, what)
	}
	return fmt.Sprintf("the hub at %s answered %s: %s", e.Endpoint, what, e.Message)
}

// Proxy is an MCP server relaying a hub's tools (the stdio proxy).
type Proxy struct {
	cfg      ProxyConfig
	endpoint string // the hub's MCP endpoint
	target   string // endpoint, listing every tool
	http     *http.Client
	srv      *mcp.Server

	mu          sync.Mutex
	hub         *mcp.ClientSession                     // nil after a failure, until the next request dials again
	sessionless bool                                   // the hub opens no session: requests stand alone
	subs        map[string]map[*mcp.ServerSession]bool // the URIs the proxy's clients subscribed to, held at the hub
	progress    map[string]progressRoute               // the calls in flight that asked for progress, by the token sent to the hub
	tokens      int64                                  // the last progress token sent to the hub
}

// progressRoute is where the hub's progress of a call goes: the proxy's
// client session and the token it gave.
type progressRoute struct {
	ss    *mcp.ServerSession
	token any
}

// NewProxy connects to the hub of cfg, reads its tools and returns the proxy
// serving them. A hub that does not answer is an error wrapping
// ErrHubUnreachable, one that refuses the token an error wrapping
// ErrHubRefused, one that answers another error a *HubError; each says what
// was tried.
func NewProxy(ctx context.Context, cfg ProxyConfig) (*Proxy, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// Every tool, each the token may not call marked so: the proxy relays
	// a call of any (the hub refuses it in its words) and lists those the
	// token may call (cfg.AllTools: all).
	endpoint := strings.TrimRight(cfg.URL, "/") + "/mcp"
	p := &Proxy{cfg: cfg, endpoint: endpoint, target: endpoint + "?" + ListAllQuery + "=" + ListAllValue,
		http: &http.Client{Transport: &bearerTransport{token: cfg.Token, base: base}},
		subs: map[string]map[*mcp.ServerSession]bool{}, progress: map[string]progressRoute{}}
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
	if !cfg.AllTools {
		p.srv.AddReceivingMiddleware(listCallable)
	}
	n := 0
	for tool, err := range hub.Tools(ctx, nil) {
		if err != nil {
			hub.Close()
			return nil, fmt.Errorf("listing the tools of the hub at %s: %w", p.endpoint, err)
		}
		p.srv.AddTool(tool, p.relay)
		if cfg.AllTools || callable(tool) {
			n++
		}
	}
	if err := p.relayResources(ctx, hub, init.Capabilities); err != nil {
		hub.Close()
		return nil, fmt.Errorf("listing the resources and prompts of the hub at %s: %w", p.endpoint, err)
	}
	p.hub = hub
	if hi := init.ServerInfo; hi != nil {
		cfg.Logger.Info("mcp proxy relaying the hub's tools", "hub", p.endpoint, "hub_version", hi.Version, "tools", n,
			"sessionless", p.sessionless)
	}
	return p, nil
}

// Server is the proxy's MCP server.
func (p *Proxy) Server() *mcp.Server { return p.srv }

// ServeStdio serves the proxy to one client over stdin/stdout until ctx
// ends or the client disconnects (both return nil). Nothing else may write
// to stdout meanwhile. A client that closes stdin right after a request
// still gets its answer: the end of stdin is seen once every request read
// is answered.
func (p *Proxy) ServeStdio(ctx context.Context) error {
	return serve(ctx, p.srv, newStdio())
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
// subscribes again). A hub that answers the initialize with an error other
// than a refused token (no session to be had: 503, …) is spoken to in the
// session-less protocol instead. Called with p.mu held, but for the first
// dial.
func (p *Proxy) dial(ctx context.Context) (*mcp.ClientSession, error) {
	version := hubProtocol
	if p.sessionless {
		version = sessionlessVersion
	}
	cs, err := p.connect(ctx, version)
	var he *HubError
	if errors.As(err, &he) && version == hubProtocol {
		p.cfg.Logger.Warn("mcp proxy: the hub opens no session; speaking the session-less protocol", "hub", p.endpoint, "err", err)
		if cs, err = p.connect(ctx, sessionlessVersion); err == nil {
			p.sessionless = true
		}
	}
	if err != nil {
		return nil, err
	}
	for uri := range p.subs {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			p.cfg.Logger.Warn("mcp proxy: subscribing again at the hub", "hub", p.endpoint, "uri", uri, "err", err)
		}
	}
	return cs, nil
}

// connect opens a client session with the hub in protocol version.
func (p *Proxy) connect(ctx context.Context, version string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "cks-mcp-proxy", Version: p.cfg.Version}, &mcp.ClientOptions{
		ResourceUpdatedHandler: p.updated, ProgressNotificationHandler: p.progressed})
	ctx, ans := withAnswer(ctx)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.target, HTTPClient: p.http, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, p.failure(err, ans)
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

// progressed relays the hub's notifications/progress to the client whose
// call it is about, under the client's own token.
func (p *Proxy) progressed(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	p.mu.Lock()
	route, ok := p.progress[fmt.Sprint(req.Params.ProgressToken)]
	p.mu.Unlock()
	if !ok {
		return
	}
	params := *req.Params
	params.ProgressToken = route.token
	if err := route.ss.NotifyProgress(ctx, &params); err != nil {
		p.cfg.Logger.Debug("mcp proxy: relaying progress", "err", err)
	}
}

// subscribe relays a resources/subscribe: the hub subscribes the proxy's
// session to the URI (refusing one that does not exist or that the token
// may not read, as the hub words it), once however many clients hold it.
func (p *Proxy) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	p.mu.Lock()
	held := len(p.subs[uri]) > 0
	p.mu.Unlock()
	if !held {
		if err := p.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		}); err != nil {
			return err
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
	p.mu.Unlock()
	if !last {
		return nil
	}
	return p.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// failure says why a request to the hub failed: the token refused (the
// hub's own words), another error the hub answered (*HubError), or the hub
// not answering.
func (p *Proxy) failure(err error, ans *hubAnswer) error {
	if he := ans.get(); he != nil {
		he.Endpoint = p.endpoint
		if he.Status == http.StatusUnauthorized {
			return fmt.Errorf("%w: %s; pass a token it takes with --token or CKS_TOKEN", ErrHubRefused, he)
		}
		return he
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

// drop forgets cs after a failure, so the next request dials again (a
// client connection that failed stays failed).
func (p *Proxy) drop(cs *mcp.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hub == cs {
		p.hub = nil
		cs.Close()
	}
}

// do sends one request to the hub with f, on the session with the hub. A
// request that never left (the session's connection had already failed:
// its GET stream ended with the session) or that the hub answered 404 —
// the session ended (idle past its timeout, closed to make room, the hub
// restarted) — reached nothing: a new session is opened and f sent again,
// once. A JSON-RPC error of the hub is returned as itself; a failure to
// reach the hub, or an HTTP error it answered, as what p.failure says. The
// session is dropped, to dial again, unless the hub answered a transient
// error (429, 502, 503, 504: the SDK keeps the connection).
func (p *Proxy) do(ctx context.Context, f func(ctx context.Context, cs *mcp.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		cs, err := p.session(ctx)
		if err != nil {
			return err
		}
		actx, ans := withAnswer(ctx)
		err = f(actx, cs)
		if rpc, ok := errors.AsType[*jsonrpc.Error](err); err == nil || ok && !clientSide[rpc.Code] {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		he := ans.get()
		if he == nil || !transient[he.Status] {
			p.drop(cs)
		}
		if attempt == 0 && (!ans.wasSent() || he != nil && he.Status == http.StatusNotFound) {
			p.cfg.Logger.Info("mcp proxy: the session with the hub ended; opening a new one", "hub", p.endpoint)
			continue
		}
		return p.failure(err, ans)
	}
}

// transient are the HTTP statuses after which the SDK's client keeps its
// connection.
var transient = map[int]bool{http.StatusTooManyRequests: true, http.StatusBadGateway: true,
	http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true}

// relay is every tool's handler: the call, as the client sent it, to the
// hub, and the hub's answer, as it is, back — with the hub's progress
// relayed under the client's progressToken. A JSON-RPC error of the hub
// goes back as itself; a hub that cannot be reached, that refuses the
// token, or that answers the request with an HTTP error, is a tool error
// saying so (a call that may have reached the hub before its answer was
// lost says that a model must read the state again).
func (p *Proxy) relay(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		p.mu.Lock()
		p.tokens++
		sent := fmt.Sprintf("cks-mcp-%d", p.tokens)
		p.progress[sent] = progressRoute{ss: req.Session, token: tok}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.progress, sent)
			p.mu.Unlock()
		}()
		params.SetProgressToken(sent)
	}
	var res *mcp.CallToolResult
	err := p.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.CallTool(ctx, params)
		return err
	})
	if rpc, ok := errors.AsType[*jsonrpc.Error](err); ok && !clientSide[rpc.Code] {
		return nil, rpc
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.cfg.Logger.Warn("mcp proxy: a call to the hub failed", "hub", p.endpoint, "tool", req.Params.Name, "err", err)
		if errors.Is(err, ErrHubUnreachable) {
			err = fmt.Errorf("%w (the call may or may not have reached the hub: read the state again before repeating it)", err)
		}
		return failed(err), nil
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
// hub's HTTP errors for the request's caller (withAnswer).
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ans, _ := r.Context().Value(answerKey{}).(*hubAnswer)
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if ans != nil {
		ans.send()
	}
	resp, err := b.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 && ans != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ans.note(resp.StatusCode, body)
	}
	return resp, err
}

// hubAnswer holds whether a request was sent to the hub and the HTTP
// error the hub answered it with, if any.
type hubAnswer struct {
	mu   sync.Mutex
	sent bool
	err  *HubError
}

// send notes a request going out.
func (a *hubAnswer) send() {
	a.mu.Lock()
	a.sent = true
	a.mu.Unlock()
}

// wasSent reports whether a request went out.
func (a *hubAnswer) wasSent() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}

type answerKey struct{}

// withAnswer returns ctx noting the hub's HTTP error to its requests.
func withAnswer(ctx context.Context) (context.Context, *hubAnswer) {
	a := &hubAnswer{}
	return context.WithValue(ctx, answerKey{}, a), a
}

// note records an HTTP error with its body: the hub's
// {"error":{"code","message"}} when it is one, else its text.
func (a *hubAnswer) note(status int, body []byte) {
	he := &HubError{Status: status}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		he.Code, he.Message = e.Error.Code, e.Error.Message
	} else {
		he.Message = strings.TrimSpace(string(body))
	}
	a.mu.Lock()
	a.err = he
	a.mu.Unlock()
}

// get returns a copy of the error noted, nil for none.
func (a *hubAnswer) get() *HubError {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		return nil
	}
	he := *a.err
	return &he
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
	var res *mcp.ReadResourceResult
	err := p.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
		return err
	})
	return res, err
}

// prompt relays a prompts/get to the hub.
func (p *Proxy) prompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := p.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		return err
	})
	return res, err
}

package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/service/auth"
)

// HTTPOptions bound the sessions of the streamable HTTP endpoint.
type HTTPOptions struct {
	// MaxSessions caps the sessions open at once (0: DefaultMaxSessions).
	// An initialize over the cap is never refused: the longest-idle
	// session is closed to make room.
	MaxSessions int
	// MaxSessionsPerToken caps the sessions one principal (one token)
	// holds at once (0: DefaultMaxSessionsPerToken): its initialize over
	// the cap closes its own longest-idle session, so a client that never
	// ends its sessions (the TypeScript SDK's close does not DELETE) only
	// ever recycles its own.
	MaxSessionsPerToken int
	// IdleTimeout closes a session that holds resource subscriptions once
	// it has had no request in flight and no open GET stream for this long
	// (0: DefaultSessionIdle).
	IdleTimeout time.Duration
	// UnsubscribedIdleTimeout is IdleTimeout for a session that holds no
	// subscription (0: DefaultUnsubscribedSessionIdle): nothing is lost
	// when it ends, its client initializes again.
	UnsubscribedIdleTimeout time.Duration
	// KeepAlive is the interval of the comments written on every open
	// event stream (0: DefaultKeepAlive), well under the 300 s after which
	// Node's fetch drops a silent response.
	KeepAlive time.Duration
	// Clock times idleness and keep-alives (nil: the system clock).
	Clock clock.Clock
}

// Defaults of HTTPOptions (the first four are the settings' of the hub's
// MCP endpoint: config.HTTP).
const (
	DefaultMaxSessions             = config.DefaultMCPMaxSessions
	DefaultMaxSessionsPerToken     = config.DefaultMCPMaxSessionsPerToken
	DefaultSessionIdle             = config.DefaultMCPSessionIdle
	DefaultUnsubscribedSessionIdle = config.DefaultMCPUnsubscribedSessionIdle
	DefaultKeepAlive               = 15 * time.Second
)

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// sessionlessVersion is the first protocol version without sessions
// (2026-07-28, SEP-2575): each request stands alone, and subscriptions ride
// on a subscriptions/listen request that streams for as long as it lasts.
const sessionlessVersion = "2026-07-28"

// HTTP serves an MCP server over the streamable HTTP transport, in both of
// the protocol's shapes: a request of the session-less protocol (an
// Mcp-Protocol-Version header of 2026-07-28 or later, no session id) is
// served on its own, as it asks; the initialize handshake of the earlier
// versions opens a session (Mcp-Session-Id, with the GET stream that carries
// its notifications), so that resources/subscribe has someone to notify.
//
// Sessions are bounded so that no caller can lock another out: at most
// MaxSessionsPerToken per principal and MaxSessions in all, an initialize
// over either cap closing the longest-idle session (the principal's own at
// its cap, anyone's on a full hub) instead of being refused. A session is
// busy while a request of it is in flight or its GET stream is open, and
// idle otherwise; it is closed after IdleTimeout idle when it holds
// subscriptions, after UnsubscribedIdleTimeout when it holds none. A
// request on a session that ended is a 404 saying to initialize again (the
// protocol's rule). Each session is bound to the token that opened it: a
// request of another token on its id is a 403 and reaches nothing.
//
// Every event stream it answers (a GET stream, a POST answered as events, a
// subscriptions/listen) carries a comment every KeepAlive, and ends once its
// credential no longer authenticates (auth.CheckCredential: on each of the
// hub's revocations and at each keep-alive) — a revoked token's session is
// closed with it.
//
// It does no authentication; the caller mounts it behind its own, which must
// put the principal in the request context (auth.WithPrincipal): every tool
// checks its permission against it and refuses, as a tool error, when there
// is none.
type HTTP struct {
	srv       *mcp.Server
	state     *serverState // nil for a server NewServer did not make
	o         HTTPOptions
	stateless http.Handler
	stateful  http.Handler

	open sync.Mutex // serialises opening sessions, so the caps are exact

	mu       sync.Mutex
	sessions map[string]*session
	reaping  bool          // the reaper runs (while sessions is not empty)
	stop     chan struct{} // closed to end the reaper
	closed   bool
}

// session is one open session: who opened it, with the context of the
// request that did (its credential), and how busy it is.
type session struct {
	id    string
	owner string
	ctx   context.Context
	ss    *mcp.ServerSession
	busy  int       // requests in flight, an open GET stream among them
	last  time.Time // the end of the last request, or the start of a busy spell
}

// NewHTTP returns the streamable HTTP endpoint of srv.
func NewHTTP(srv *mcp.Server, o HTTPOptions) *HTTP {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerToken <= 0 {
		o.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultSessionIdle
	}
	if o.UnsubscribedIdleTimeout <= 0 {
		o.UnsubscribedIdleTimeout = DefaultUnsubscribedSessionIdle
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	get := func(*http.Request) *mcp.Server { return srv }
	return &HTTP{srv: srv, state: stateOf(srv), o: o, sessions: map[string]*session{},
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
		// No SessionTimeout: idleness is decided here, where a GET stream
		// counts as activity and subscriptions lengthen it.
		stateful: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{}),
	}
}

// HTTPHandler is NewHTTP with the default bounds.
func HTTPHandler(srv *mcp.Server) *HTTP { return NewHTTP(srv, HTTPOptions{}) }

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = withAllTools(r)
	id := r.Header.Get(sessionIDHeader)
	switch {
	case id == "" && (r.Header.Get("Mcp-Protocol-Version") >= sessionlessVersion || !initializes(r)):
		// The session-less protocol, or a request that stands alone (a
		// call without a handshake): served on its own, as before sessions.
		h.stream(w, r, nil, h.stateless)
	case id != "":
		s, err := h.use(id, principalID(r))
		if err != nil {
			err.write(w)
			return
		}
		defer h.release(s)
		h.stream(w, forgetGrants(r), s, h.stateful)
	default:
		h.openSession(w, forgetGrants(r))
	}
}

// forgetGrants is r without the grants its authentication read: a
// session's tools run in the context of the request that opened it, long
// after that request, so each of their checks reads the grants anew.
func forgetGrants(r *http.Request) *http.Request {
	return r.WithContext(auth.ForgetGrants(r.Context()))
}

// openSession serves an initialize of the protocol with sessions, which
// opens one, after making room for it under the caps.
func (h *HTTP) openSession(w http.ResponseWriter, r *http.Request) {
	h.open.Lock()
	defer h.open.Unlock()
	owner := principalID(r)
	h.expireIdle()
	h.makeRoom(owner)
	// The session is noted as its id goes out, before its client can send
	// anything on it.
	rec := &sessionRecorder{ResponseWriter: w, opened: func(id string) { h.opened(id, owner, r.Context()) }}
	h.stream(rec, r, nil, h.stateful)
}

// makeRoom closes sessions until owner may open one more: its own
// longest-idle while it holds its cap, then anyone's longest-idle while
// the hub holds its cap.
func (h *HTTP) makeRoom(owner string) {
	for {
		h.mu.Lock()
		var victim *session
		if n := h.countLocked(owner); n >= h.o.MaxSessionsPerToken {
			victim = h.longestIdleLocked(owner, true)
		} else if len(h.sessions) >= h.o.MaxSessions {
			victim = h.longestIdleLocked("", false)
		}
		if victim != nil {
			delete(h.sessions, victim.id)
		}
		h.mu.Unlock()
		if victim == nil {
			return
		}
		h.closeSession(victim)
	}
}

// countLocked is how many sessions owner holds (h.mu held).
func (h *HTTP) countLocked(owner string) int {
	n := 0
	for _, s := range h.sessions {
		if s.owner == owner {
			n++
		}
	}
	return n
}

// longestIdleLocked returns the session to close first — of owner when
// only is set, else of anyone: an idle one before a busy one, and of those
// the one idle (or busy) the longest.
func (h *HTTP) longestIdleLocked(owner string, only bool) *session {
	first := func(a, b *session) bool {
		if (a.busy == 0) != (b.busy == 0) {
			return a.busy == 0
		}
		return a.last.Before(b.last)
	}
	var best *session
	for _, s := range h.sessions {
		if (!only || s.owner == owner) && (best == nil || first(s, best)) {
			best = s
		}
	}
	return best
}

// opened records the session a response assigned id, and starts the
// reaper of idle sessions.
func (h *HTTP) opened(id, owner string, ctx context.Context) {
	var ss *mcp.ServerSession
	for x := range h.srv.Sessions() {
		if x.ID() == id {
			ss = x
			break
		}
	}
	if ss == nil {
		return // already gone
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		go ss.Close() //nolint:errcheck // closing
		return
	}
	h.sessions[id] = &session{id: id, owner: owner, ctx: ctx, ss: ss, last: h.o.Clock.Monotonic()}
	// A session that ends by itself (DELETE, a failed initialize) is
	// forgotten when it ends.
	go func() {
		ss.Wait() //nolint:errcheck // only its end matters
		h.forget(id, ss)
	}()
	if !h.reaping {
		h.reaping = true
		h.stop = make(chan struct{})
		go h.reap(h.stop)
	}
}

// forget drops the record of session id once ss has ended.
func (h *HTTP) forget(id string, ss *mcp.ServerSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil && s.ss == ss {
		delete(h.sessions, id)
	}
	h.stopReaperLocked()
}

// stopReaperLocked ends the reaper when no session is left (h.mu held).
func (h *HTTP) stopReaperLocked() {
	if len(h.sessions) == 0 && h.reaping {
		h.reaping = false
		close(h.stop)
	}
}

// closeSession ends s (its GET stream with it); its record is already
// gone.
func (h *HTTP) closeSession(s *session) {
	s.ss.Close() //nolint:errcheck // closing
	h.mu.Lock()
	h.stopReaperLocked()
	h.mu.Unlock()
}

// sessionError is a request on a session that cannot be served.
type sessionError struct {
	status  int
	code    string
	message string
}

func (e *sessionError) write(w http.ResponseWriter) { writeError(w, e.status, e.code, e.message) }

// use marks session id busy with a request of principal owner: an ended
// session (closed, evicted, or idle past its timeout, which closes it now)
// is a 404 saying to initialize again, another principal's a 403.
func (h *HTTP) use(id, owner string) (*session, *sessionError) {
	now := h.o.Clock.Monotonic()
	h.mu.Lock()
	s := h.sessions[id]
	var expired bool
	switch {
	case s == nil:
	case s.owner != owner:
		h.mu.Unlock()
		return nil, &sessionError{http.StatusForbidden, cks.CodeForbidden,
			"this MCP session belongs to another token: open a session of your own (initialize without Mcp-Session-Id)"}
	case s.busy == 0 && now.Sub(s.last) >= h.timeout(s):
		delete(h.sessions, id)
		expired = true
	default:
		s.busy++
		s.last = now
	}
	h.mu.Unlock()
	if expired {
		h.closeSession(s)
	}
	if s == nil || expired {
		return nil, &sessionError{http.StatusNotFound, cks.CodeNotFound, fmt.Sprintf(
			"MCP session %s not found: it ended (idle longer than %s, or %s with subscriptions; closed to make room for "+
				"a newer one; or closed by its client): initialize a new session (POST initialize without Mcp-Session-Id)",
			id, h.o.UnsubscribedIdleTimeout, h.o.IdleTimeout)}
	}
	return s, nil
}

// release ends a request of s.
func (h *HTTP) release(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.busy--
	s.last = h.o.Clock.Monotonic()
}

// timeout is how long s may stay idle (h.mu held).
func (h *HTTP) timeout(s *session) time.Duration {
	if h.state != nil && h.state.subs != nil && h.state.subs.holds(s.ss) {
		return h.o.IdleTimeout
	}
	return h.o.UnsubscribedIdleTimeout
}

// expireIdle closes every session idle past its timeout.
func (h *HTTP) expireIdle() {
	now := h.o.Clock.Monotonic()
	h.mu.Lock()
	var gone []*session
	for id, s := range h.sessions {
		if s.busy == 0 && now.Sub(s.last) >= h.timeout(s) {
			delete(h.sessions, id)
			gone = append(gone, s)
		}
	}
	h.mu.Unlock()
	for _, s := range gone {
		h.closeSession(s)
	}
}

// reap closes idle sessions past their timeout, looking every half of the
// shorter timeout, and the sessions whose credential was revoked, at each
// revocation, until stop is closed.
func (h *HTTP) reap(stop chan struct{}) {
	t := h.o.Clock.NewTicker(min(h.o.IdleTimeout, h.o.UnsubscribedIdleTimeout) / 2)
	defer t.Stop()
	revoked := h.revoked()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			h.expireIdle()
		case <-revoked:
			revoked = h.revoked()
			h.endRevoked()
		}
	}
}

// endRevoked closes the sessions whose credential no longer authenticates.
func (h *HTTP) endRevoked() {
	h.mu.Lock()
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		if auth.CheckCredential(s.ctx) != nil {
			h.end(s)
		}
	}
}

// end closes s if it is still open.
func (h *HTTP) end(s *session) {
	h.mu.Lock()
	open := h.sessions[s.id] == s
	if open {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	if open {
		h.closeSession(s)
	}
}

// revoked is a channel closed at the hub's next revocation (nil, never
// closed, for a server without principals).
func (h *HTTP) revoked() <-chan struct{} {
	if h.state == nil || h.state.svc.Principals == nil {
		return nil
	}
	return h.state.svc.Principals.Revoked()
}

// stream serves r with next, writing a keep-alive comment every KeepAlive
// while the answer is an event stream, and ending it — with s, the
// session it belongs to, if any — once r's credential no longer
// authenticates.
func (h *HTTP) stream(w http.ResponseWriter, r *http.Request, s *session, next http.Handler) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw := &sseWriter{ResponseWriter: w, streaming: make(chan struct{})}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		h.watch(ctx, sw, s, cancel)
	}()
	next.ServeHTTP(sw, r.WithContext(ctx))
	sw.finish()
	cancel()
	<-watched
}

// watch keeps sw's event stream alive and checks its credential, until ctx
// ends.
func (h *HTTP) watch(ctx context.Context, sw *sseWriter, s *session, cancel func()) {
	select {
	case <-ctx.Done():
		return
	case <-sw.streaming:
	}
	t := h.o.Clock.NewTicker(h.o.KeepAlive)
	defer t.Stop()
	revoked := h.revoked()
	for {
		select {
		case <-ctx.Done():
			return
		case <-revoked:
			revoked = h.revoked()
			if auth.CheckCredential(ctx) == nil {
				continue
			}
		case <-t.C():
			if auth.CheckCredential(ctx) == nil {
				if sw.comment() != nil {
					cancel() // the client is gone
					return
				}
				continue
			}
		}
		// The credential no longer authenticates: the stream ends, and
		// the session with it.
		if s != nil {
			h.end(s)
		}
		cancel()
		return
	}
}

// initializes reports whether r is a POST whose body (a message or a
// batch) holds an initialize request; the body stays readable.
func initializes(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "initialize"
	}
	var batch []struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &batch)
	return slices.ContainsFunc(batch, func(m struct {
		Method string `json:"method"`
	}) bool {
		return m.Method == "initialize"
	})
}

// Open returns how many sessions are open.
func (h *HTTP) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// SessionsByToken returns how many sessions are open, by the id of the
// principal that opened each ("" for none).
func (h *HTTP) SessionsByToken() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, s := range h.sessions {
		out[s.owner]++
	}
	return out
}

// Close ends every open session (their GET streams with them), so a
// shutting-down hub does not wait on them.
func (h *HTTP) Close() {
	h.mu.Lock()
	h.closed = true
	clear(h.sessions)
	h.stopReaperLocked()
	h.mu.Unlock()
	for ss := range h.srv.Sessions() {
		if ss.ID() != "" {
			ss.Close() //nolint:errcheck // closing
		}
	}
}

// principalID is the id of the request's principal ("" for none or the
// local operator).
func principalID(r *http.Request) string {
	p, _ := auth.PrincipalFrom(r.Context())
	return p.ID
}

// sseWriter serialises the writes of a handler and of the keep-alive, and
// tells when the answer turned out to be an event stream.
type sseWriter struct {
	http.ResponseWriter
	streaming chan struct{} // closed once the answer is an event stream

	mu      sync.Mutex
	started bool // the header is written
	done    bool // the handler returned: nothing more is written
}

// start notes the header going out (sw.mu held).
func (sw *sseWriter) start() {
	if sw.started {
		return
	}
	sw.started = true
	if strings.HasPrefix(sw.Header().Get("Content-Type"), "text/event-stream") {
		close(sw.streaming)
	}
}

func (sw *sseWriter) WriteHeader(code int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if code == http.StatusOK {
		sw.start()
	} else {
		sw.started = true
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *sseWriter) Write(b []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.start()
	return sw.ResponseWriter.Write(b)
}

// FlushError flushes what was written (http.ResponseController's flush).
func (sw *sseWriter) FlushError() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return http.NewResponseController(sw.ResponseWriter).Flush()
}

// Flush is FlushError for an http.Flusher.
func (sw *sseWriter) Flush() { _ = sw.FlushError() }

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (sw *sseWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// comment writes a keep-alive comment while the handler streams.
func (sw *sseWriter) comment() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.done {
		return nil
	}
	if _, err := io.WriteString(sw.ResponseWriter, ": keep-alive\n\n"); err != nil {
		return err
	}
	return http.NewResponseController(sw.ResponseWriter).Flush()
}

// finish notes the handler's return.
func (sw *sseWriter) finish() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.done = true
}

// sessionRecorder calls opened with the session id a response assigns,
// once, before the response is sent.
type sessionRecorder struct {
	http.ResponseWriter
	opened func(id string)
	done   bool
}

func (s *sessionRecorder) note() {
	if !s.done {
		s.done = true
		if id := s.Header().Get(sessionIDHeader); id != "" {
			s.opened(id)
		}
	}
}

func (s *sessionRecorder) WriteHeader(code int) {
	s.note()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush flushes the stream of events an answer may be.
func (s *sessionRecorder) Flush() {
	s.note()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// writeError writes the API's error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(cks.ErrorBody{Error: cks.Error{Code: code, Message: msg}}) //nolint:errcheck // the client went away
}

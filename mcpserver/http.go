package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
)

// HTTPOptions bound the sessions of the streamable HTTP endpoint.
type HTTPOptions struct {
	// MaxSessions caps the sessions open at once (0: DefaultMaxSessions);
	// an initialize over the cap is a 503 saying so.
	MaxSessions int
	// IdleTimeout closes a session that sends no request for this long
	// (0: DefaultSessionIdle).
	IdleTimeout time.Duration
}

// Defaults of HTTPOptions.
const (
	DefaultMaxSessions = 256
	DefaultSessionIdle = 30 * time.Minute
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
// Sessions are bounded: at most MaxSessions at once, each closed after
// IdleTimeout without a request, and each bound to the token that opened it —
// a request of another token on its id is a 403 and reaches nothing.
//
// It does no authentication; the caller mounts it behind its own, which must
// put the principal in the request context (auth.WithPrincipal): every tool
// checks its permission against it and refuses, as a tool error, when there
// is none.
type HTTP struct {
	srv       *mcp.Server
	max       int
	stateless http.Handler
	stateful  http.Handler

	open   sync.Mutex // serialises opening sessions, so the cap is exact
	mu     sync.Mutex
	owners map[string]string // session id → the principal that opened it
}

// NewHTTP returns the streamable HTTP endpoint of srv.
func NewHTTP(srv *mcp.Server, o HTTPOptions) *HTTP {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultSessionIdle
	}
	get := func(*http.Request) *mcp.Server { return srv }
	return &HTTP{srv: srv, max: o.MaxSessions, owners: map[string]string{},
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
		stateful:  mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{SessionTimeout: o.IdleTimeout}),
	}
}

// HTTPHandler is NewHTTP with the default bounds.
func HTTPHandler(srv *mcp.Server) *HTTP { return NewHTTP(srv, HTTPOptions{}) }

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionIDHeader)
	switch {
	case id == "" && (r.Header.Get("Mcp-Protocol-Version") >= sessionlessVersion || !initializes(r)):
		// The session-less protocol, or a request that stands alone (a
		// call without a handshake): served on its own, as before sessions.
		h.stateless.ServeHTTP(w, r)
	case id != "":
		if owner, ok := h.owner(id); ok && owner != principalID(r) {
			writeError(w, http.StatusForbidden, cks.CodeForbidden,
				"this MCP session belongs to another token: open a session of your own (initialize without Mcp-Session-Id)")
			return
		}
		h.stateful.ServeHTTP(w, forgetGrants(r))
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
// opens one, under the cap.
func (h *HTTP) openSession(w http.ResponseWriter, r *http.Request) {
	h.open.Lock()
	defer h.open.Unlock()
	live := h.prune()
	if live >= h.max {
		writeError(w, http.StatusServiceUnavailable, cks.CodeTooManySessions, fmt.Sprintf(
			"too many MCP sessions (%d, the most this hub keeps open): close one (DELETE /mcp with its Mcp-Session-Id), "+
				"wait for an idle one to time out, or use the session-less protocol (2026-07-28)", h.max))
		return
	}
	owner := principalID(r)
	// The owner is noted as the session id goes out, before its client can
	// send anything on it.
	h.stateful.ServeHTTP(&sessionRecorder{ResponseWriter: w, opened: func(id string) {
		h.mu.Lock()
		h.owners[id] = owner
		h.mu.Unlock()
	}}, r)
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

// prune forgets the owners of sessions that ended and returns how many
// sessions are open.
func (h *HTTP) prune() int {
	live := map[string]bool{}
	for ss := range h.srv.Sessions() {
		if id := ss.ID(); id != "" {
			live[id] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.owners {
		if !live[id] {
			delete(h.owners, id)
		}
	}
	return len(live)
}

func (h *HTTP) owner(id string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.owners[id]
	return o, ok
}

// Close ends every open session (their GET streams with them), so a
// shutting-down hub does not wait on them.
func (h *HTTP) Close() {
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

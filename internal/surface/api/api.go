// Package api is the HTTP face of a cks hub: the JSON API under /v1, Server-Sent
// Events at /v1/events, Prometheus metrics, health, and bearer-token auth in
// front of everything else it mounts (the MCP endpoint and the studio). It holds
// no behaviour of its own: every answer comes from the service packages.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// CookieName is the cookie in which the studio keeps a browser's session:
// the secret of a session POST /login opened (auth.Login), never a bearer
// token. (It was "cks_token", holding the token itself, before issue 22; a
// browser still sending that cookie is simply not signed in.)
const CookieName = "cks_session"

// Config is what the API serves from.
type Config struct {
	// Services are what the operations reach (the hub builds one for every
	// surface); a nil service leaves its endpoints out. Their Principals
	// authenticate every request, their Bus feeds /v1/events (a fresh one
	// when nil), their Clock dates sessions and the health cache (the
	// system clock when nil).
	Services *ops.Services
	// Collectors are extra Prometheus collectors served at /metrics.
	Collectors []prometheus.Collector
	// MCP, when set, is mounted at /mcp behind auth.
	MCP http.Handler
	// Studio, when set, is mounted at / behind auth; its /login and /static/
	// routes are public.
	Studio  http.Handler
	Logger  *slog.Logger
	Version string
	// URL is the hub's base URL (http://HOST:PORT), the server its OpenAPI
	// document names; empty: the document's own origin.
	URL string
	// KeepAlive is the SSE comment interval (default 15 s).
	KeepAlive time.Duration
	// Health, when set, is the store's StorageHealth: /healthz answers 503
	// "degraded" while it fails (its result is reused for HealthTTL).
	Health func(context.Context) error
	// Leader, when set, is the hub's maintenance elector: /healthz names the
	// hub that runs the sweepers' passes, and whether it is this one.
	Leader interface {
		ID() string
		Current(ctx context.Context) (cks.Leader, bool, error)
	}
	// ClockCorrection, when set, is the correction of the hub's clock to
	// the database's (backend.Backend.ClockCorrection): /healthz shows the
	// offset in use.
	ClockCorrection func() (clock.Measurement, bool)
	// WriteTimeout is the HTTP server's write timeout, if it has one: the
	// event stream and /mcp lift it, and a stop or update that waits for an
	// abort confirmation extends it by its wait.
	WriteTimeout time.Duration
	// FailureLimit, FailureWindow and FailureClients throttle failed
	// authentication (throttle.go): more than FailureLimit failures from one
	// client address within FailureWindow are answered 429 until it ends;
	// at most FailureClients addresses are tracked. Zero means the default
	// (DefaultFailureLimit, …).
	FailureLimit   int
	FailureWindow  time.Duration
	FailureClients int
	// PipelineInProcess says that the hub runs the research pipeline
	// itself: /healthz says so, and `cks research --wait` reads it.
	PipelineInProcess bool
	// SecureCookie marks the studio's cookie Secure on every answer: the
	// hub is reached over HTTPS only, through a TLS-terminating proxy
	// (CKS_HTTP_SECURE_COOKIE). Without it the cookie is Secure when the
	// hub serves TLS itself, or when a trusted proxy says the browser used
	// HTTPS.
	SecureCookie bool
	// TrustedProxies are the addresses of the proxies whose
	// X-Forwarded-Proto the hub believes (CKS_HTTP_TRUSTED_PROXIES): a
	// request from one of them with X-Forwarded-Proto: https came over
	// HTTPS. Another client's header is ignored (any client can send it).
	TrustedProxies []netip.Prefix
}

// API is the hub's HTTP handler.
type API struct {
	cfg     Config
	svc     *ops.Services
	routes  []Route
	mux     *http.ServeMux
	openapi []byte          // GET /v1/openapi.json, of the operations served
	streams context.Context // cancelled when the server starts shutting down
	closeSt context.CancelFunc
	health  healthCache
	fails   *failureLimiter
}

// New builds the handler.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	svc := cfg.Services
	if svc == nil {
		svc = &ops.Services{}
	}
	if svc.Bus == nil {
		svc.Bus = &events.Bus{}
	}
	if svc.Clock == nil {
		svc.Clock = clock.System{}
	}
	if svc.Logger == nil {
		svc.Logger = cfg.Logger
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.FailureLimit <= 0 {
		cfg.FailureLimit = DefaultFailureLimit
	}
	if cfg.FailureWindow <= 0 {
		cfg.FailureWindow = DefaultFailureWindow
	}
	if cfg.FailureClients <= 0 {
		cfg.FailureClients = DefaultFailureClients
	}
	a := &API{cfg: cfg, svc: svc, mux: http.NewServeMux(),
		fails: newFailureLimiter(svc.Clock, cfg.Logger, cfg.FailureLimit, cfg.FailureWindow, cfg.FailureClients)}
	a.streams, a.closeSt = context.WithCancel(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&processCollector{svc: svc.Liveness, log: cfg.Logger})
	reg.MustRegister(cfg.Collectors...)
	if svc.Sweepers != nil {
		reg.MustRegister(sweeperCollector{reg: svc.Sweepers.Registry()})
	}

	// Public.
	a.mux.HandleFunc("GET /healthz", a.healthz)
	a.mux.HandleFunc("POST /login", a.login)
	a.mux.HandleFunc("POST /logout", a.logout)
	a.routeDiscovery()
	// Authenticated: every operation of the table the services offer, each
	// with the permission it needs (see Routes).
	doc, err := ops.OpenAPI(ops.Available(ops.All(), ops.HTTP, a.svc), cfg.Version, cfg.URL)
	if err != nil {
		panic(fmt.Sprintf("api: %v", err)) // the table's schemas are fixed at build time
	}
	a.openapi = doc
	a.routeOps(map[string]http.Handler{
		ops.Metrics.Spec().Name:         promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		ops.Events.Spec().Name:          http.HandlerFunc(a.events),
		ops.OpenAPIDocument.Spec().Name: http.HandlerFunc(a.serveOpenAPI),
	})
	a.mux.Handle("/v1/", a.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, cks.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})))
	if cfg.MCP != nil {
		// Each MCP tool checks its own permission with the same auth.Service,
		// through the principal authenticate puts in the request context.
		// It streams its answers (server-sent events), so the server's
		// timeouts are lifted for it as for /v1/events.
		a.mux.Handle(mcpPath, a.authed(streaming(cfg.MCP)))
	}
	if cfg.Studio != nil {
		a.mux.Handle("GET /login", cfg.Studio)
		a.mux.Handle("GET /static/", cfg.Studio)
		a.mux.Handle("/", a.authedPage(cfg.Studio))
	}
	return a
}

// CloseStreams ends every open event stream, so a graceful shutdown does not
// wait on them. The HTTP server calls it when it starts shutting down.
func (a *API) CloseStreams() { a.closeSt() }

// ErrorBody is the shape of every error response.
type ErrorBody = cks.ErrorBody

// WriteError writes {"error":{"code":…,"message":…}} with status.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: cks.Error{Code: code, Message: msg}})
}

// writeJSON writes v as compact JSON without HTML escaping: an answer is
// about the size of what was stored. Indentation costs a level of spaces
// per line and nesting (an 18 KB payload nested 9,000 deep was once a
// 162 MB answer) and \u003c-style escapes six bytes per <, > or &; an
// answer is read by programs, and `cks` indents what it shows.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeAnswer(w, status, v, false)
}

// writeAnswer is writeJSON, indented when pretty is set (?pretty=1 on an
// operation's request): for a person reading with curl. The nesting of a
// stored value is bounded (cks.MaxJSONDepth), so the indentation is too.
func writeAnswer(w http.ResponseWriter, status int, v any, pretty bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if !pretty {
		switch p := v.(type) {
		case cks.TaskPage:
			rest := p
			rest.Tasks = nil
			writeRows(w, enc, "tasks", p.Tasks, rest)
			return
		case cks.ObjectPage:
			rest := p
			rest.Objects = nil
			writeRows(w, enc, "objects", p.Objects, rest)
			return
		}
	}
	enc.Encode(v) //nolint:errcheck // the client went away
}

// writeRows streams a page ({"KEY":[rows…],…}, as the page's own encoding
// writes it, but [] for no rows) one row at a time, so an answer of many
// rows is never built whole beside the rows themselves. rest is the page
// without its rows (KEY, its first field, null): its encoding gives what
// follows the rows (next_cursor, a stopped_first page's counts).
func writeRows[T any](w io.Writer, enc *json.Encoder, key string, rows []T, rest any) {
	head := `{"` + key + `":`
	tail, err := json.Marshal(rest)
	if err != nil || !bytes.HasPrefix(tail, []byte(head+"null")) {
		panic(fmt.Sprintf("api: a page of %s does not encode as %snull…: %s %v", key, head, tail, err))
	}
	if _, err := io.WriteString(w, head+"["); err != nil {
		return // the client went away
	}
	for i := range rows {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return
			}
		}
		if enc.Encode(rows[i]) != nil { // a row and a newline: white space in an array
			return
		}
	}
	io.WriteString(w, "]"+string(tail[len(head)+len("null"):])+"\n") //nolint:errcheck // the client went away
}

// fail answers err as every surface reports it (ops.FailureOf).
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	f := ops.FailureOf(r.Context(), a.cfg.Logger, r.Method+" "+r.URL.Path, err)
	if f.Status == http.StatusServiceUnavailable {
		retryAfter(w, ops.StorageRetryAfter)
	}
	writeJSON(w, f.Status, ErrorBody{Error: f})
}

// serveOpenAPI answers the OpenAPI document of the operations served.
func (a *API) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(a.openapi) //nolint:errcheck // the client went away
}

// HealthTTL is how long /healthz reuses a storage health check.
const HealthTTL = 2 * time.Second

// Health is the body of GET /healthz: status "ok", or "degraded" (503) when
// the hub cannot write its database, with storage saying why: "read_only",
// "full", "unavailable" or "error" (the check itself failed). The reason's
// details (file paths, hosts) are in the hub log, not in this public answer.
type Health struct {
	Status  string `json:"status"`
	Storage string `json:"storage,omitempty"`
	Message string `json:"message,omitempty"`
	Version string `json:"version"`
	// Leader is the hub running the sweepers' passes, when one holds the
	// maintenance leadership (a hub that does not run its passes is healthy:
	// it stands by).
	Leader *HealthLeader `json:"leader,omitempty"`
	// Clock is the correction of the hub's clock to the database's, when
	// one is in use (Postgres).
	Clock *HealthClock `json:"clock,omitempty"`
	// Pipeline is "in_process" when this hub runs the research pipeline
	// itself (CKS_PIPELINE_IN_PROCESS); absent when it does not (a
	// `cks agent pipeline` process may).
	Pipeline string `json:"pipeline,omitempty"`
}

// HealthClock is the correction of the hub's clock in /healthz.
type HealthClock struct {
	// OffsetS is the database's clock minus this host's, in seconds: what
	// the hub adds to its host's clock.
	OffsetS float64 `json:"offset_s"`
	// UncertaintyS is half the measurement's round trip, in seconds.
	UncertaintyS float64 `json:"uncertainty_s"`
}

// HealthLeader names the maintenance leader in /healthz.
type HealthLeader struct {
	ID string `json:"id"`
	// ThisHub is true on the leader's own /healthz.
	ThisHub bool `json:"this_hub"`
}

// healthCache keeps the last storage check of /healthz for HealthTTL, so
// frequent probes cost the database one check per TTL.
type healthCache struct {
	mu  sync.Mutex
	at  time.Time
	err error
	ok  bool // at and err hold a result
	// leader is the maintenance leader read with the check (nil: none, or
	// not asked).
	leader *HealthLeader
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ok", Version: a.cfg.Version}
	if a.cfg.PipelineInProcess {
		h.Pipeline = "in_process"
	}
	if a.cfg.ClockCorrection != nil {
		if m, ok := a.cfg.ClockCorrection(); ok {
			h.Clock = &HealthClock{OffsetS: m.Offset.Seconds(), UncertaintyS: (m.RTT / 2).Seconds()}
		}
	}
	if a.cfg.Health == nil {
		writeJSON(w, http.StatusOK, h)
		return
	}
	h.Storage = "ok"
	if err := a.storageHealth(r.Context()); err != nil {
		code, what := ops.StorageState(err)
		h.Status, h.Storage, h.Message = "degraded", code, "the hub's database "+what
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	h.Leader = a.health.leader
	writeJSON(w, http.StatusOK, h)
}

// storageHealth runs cfg.Health at most once per HealthTTL (by the services' clock).
func (a *API) storageHealth(ctx context.Context) error {
	c := &a.health
	c.mu.Lock()
	defer c.mu.Unlock()
	now := a.svc.Clock.Now()
	if c.ok && now.Sub(c.at) < HealthTTL {
		return c.err
	}
	check, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := a.cfg.Health(check)
	var leader *HealthLeader
	if err == nil && a.cfg.Leader != nil {
		if l, ok, lerr := a.cfg.Leader.Current(check); lerr != nil {
			a.cfg.Logger.Warn("healthz: leader read", "err", lerr)
		} else if ok {
			leader = &HealthLeader{ID: l.ID, ThisHub: l.ID == a.cfg.Leader.ID()}
		}
	}
	if ctx.Err() != nil {
		return err // the caller went away: nothing learnt, nothing cached
	}
	if err != nil {
		a.cfg.Logger.Warn("healthz: storage check", "err", err)
	}
	c.at, c.err, c.ok, c.leader = now, err, true, leader
	return err
}

// events streams bus events as Server-Sent Events until the client leaves,
// the server shuts down or the stream's credential no longer authenticates
// (its token revoked, its studio session signed out or expired: checked on
// every revocation this hub makes and at every keep-alive). Events carry
// no payload beyond their type, time and a pipeline step's detail: a
// client re-reads what it shows.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteError(w, http.StatusInternalServerError, cks.CodeInternal, "streaming unsupported")
		return
	}
	clearDeadlines(w) // the stream lasts as long as its client
	ch, unsubscribe := a.svc.Bus.Subscribe()
	defer unsubscribe()
	revoked := a.revoked() // before the client learns the stream is open
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(": connected\n\n")) //nolint:errcheck
	fl.Flush()
	keep := time.NewTicker(a.cfg.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-a.streams.Done():
			return
		case <-revoked:
			// Something was revoked here: the stream ends if it was its
			// credential.
			if auth.CheckCredential(r.Context()) != nil {
				return
			}
			revoked = a.revoked()
			continue
		case <-keep.C:
			// A revocation by another hub on the database is seen here.
			if auth.CheckCredential(r.Context()) != nil {
				return
			}
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
		case e, ok := <-ch:
			if !ok {
				return
			}
			data, _ := json.Marshal(e)
			if _, err := w.Write([]byte("event: " + e.Type + "\ndata: " + string(data) + "\n\n")); err != nil {
				return
			}
		}
		fl.Flush()
	}
}

// revoked is a channel closed at this hub's next revocation (nil, never
// closed, without principals).
func (a *API) revoked() <-chan struct{} {
	if a.svc.Principals == nil {
		return nil
	}
	return a.svc.Principals.Revoked()
}

// PrincipalFrom returns the authenticated principal of a request.
func PrincipalFrom(ctx context.Context) (cks.Principal, bool) {
	return auth.PrincipalFrom(ctx)
}

// principalOf authenticates r and returns its context with the caller: by the bearer token of its Authorization
// header, else by the studio session its cookie names. The cookie is only
// ever a session: a bearer token put there is a malformed session.
// A bearer token's request reads its principal and grants in one
// statement (AuthenticateWithGrants), and its checks use those grants.
func (a *API) principalOf(r *http.Request) (context.Context, error) {
	ctx, principals := r.Context(), a.svc.Principals
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return ctx, errors.Join(errors.New("malformed Authorization header: expected \"Bearer <token>\""),
				auth.ErrUnauthenticated)
		}
		tok = strings.TrimSpace(tok)
		p, grants, err := principals.AuthenticateWithGrants(ctx, tok)
		if err != nil {
			return ctx, err
		}
		ctx = auth.WithCredentialCheck(ctx, func(ctx context.Context) error {
			_, err := principals.Authenticate(ctx, tok)
			return err
		})
		return auth.WithPrincipalGrants(ctx, principals, p, grants), nil
	}
	if c, err := r.Cookie(CookieName); err == nil {
		p, sess, err := principals.AuthenticateSession(ctx, c.Value, a.svc.Clock.Now())
		if err != nil {
			return ctx, err
		}
		ctx = auth.WithCredentialCheck(ctx, func(ctx context.Context) error {
			_, _, err := principals.AuthenticateSession(ctx, c.Value, a.svc.Clock.Now())
			return err
		})
		return auth.WithSession(auth.WithPrincipal(ctx, principals, p), sess.ID), nil
	}
	_, err := principals.Authenticate(ctx, "") // the missing token's error
	return ctx, err
}

// presentsCredential reports whether r carries a credential at all (a
// request without one is no failed attempt; see throttle.go).
func presentsCredential(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	_, err := r.Cookie(CookieName)
	return err == nil
}

func (a *API) authenticate(r *http.Request) (*http.Request, error) {
	ctx, err := a.principalOf(r)
	if err != nil {
		return r, err
	}
	return r.WithContext(ctx), nil
}

// authed answers 401 with a JSON error unless the request carries a valid
// token or session (429 for an address failing too often).
func (a *API) authed(next http.Handler) http.Handler {
	return a.requireAuth(next, func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("WWW-Authenticate", challenge(r))
		WriteError(w, http.StatusUnauthorized, cks.CodeUnauthenticated, err.Error())
	}, func(w http.ResponseWriter, _ *http.Request, wait time.Duration) { writeThrottled(w, wait) })
}

// authedPage sends a browser without a valid session to the login form,
// and drops a cookie that no longer names one (expired, signed out,
// revoked), so the browser stops presenting it. A throttled address is sent
// to the form too, which says why (a browser's user reads a page, not a
// JSON 429). The studio checks, for each page, the permissions of the
// operations whose output it shows.
func (a *API) authedPage(next http.Handler) http.Handler {
	return a.requireAuth(next, func(w http.ResponseWriter, r *http.Request, _ error) {
		if _, err := r.Cookie(CookieName); err == nil {
			a.clearCookie(w, r)
		}
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	}, a.throttledLogin)
}

// requireAuth runs next for an authenticated request, denied for one without
// valid credentials — throttled instead once its address failed too often —
// and answers 500 when they could not be checked at all.
func (a *API) requireAuth(next http.Handler, denied func(http.ResponseWriter, *http.Request, error),
	throttled func(http.ResponseWriter, *http.Request, time.Duration)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, err := a.authenticate(r)
		switch {
		case err == nil:
			// The body is read only now, after the headers authenticated
			// the request (hygiene.go).
			if r, ok := a.readBody(w, r); ok {
				next.ServeHTTP(w, r)
			}
		case errors.Is(err, auth.ErrUnauthenticated):
			if presentsCredential(r) {
				if wait, over := a.fails.fail(clientIP(r)); over {
					throttled(w, r, wait)
					return
				}
			}
			denied(w, r, err)
		default:
			a.fail(w, r, err)
		}
	})
}

// throttledLogin sends a browser of a throttled address to the login form,
// which says to wait (Retry-After is set too, for what reads it).
func (a *API) throttledLogin(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	s := retryAfter(w, wait)
	http.Redirect(w, r, "/login?error=throttled&retry="+strconv.Itoa(s), http.StatusSeeOther)
}

// login opens a studio session for the token of the form (auth.Login) and
// puts its secret, never the token, in the cookie. The cookie lasts as long
// as the session (auth.SessionTTL), is HttpOnly and SameSite=Strict, and
// Secure when the browser reached the hub over HTTPS (secure).
func (a *API) login(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimSpace(r.PostFormValue("token"))
	secret, s, err := a.svc.Principals.Login(r.Context(), tok, a.svc.Clock.Now())
	if err != nil {
		if !errors.Is(err, auth.ErrUnauthenticated) {
			a.fail(w, r, err)
			return
		}
		if wait, over := a.fails.fail(clientIP(r)); over {
			a.throttledLogin(w, r, wait)
			return
		}
		http.Redirect(w, r, "/login?error=1", http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: a.secure(r), MaxAge: int(s.ExpiresAt.Sub(s.CreatedAt).Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the cookie's session (its row is deleted, so the same value
// never signs in again) and drops the cookie.
func (a *API) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		if err := a.svc.Principals.Logout(r.Context(), c.Value, a.svc.Clock.Now()); err != nil {
			a.fail(w, r, err) // the session still stands: say so rather than pretend
			return
		}
	}
	a.clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// clearCookie tells the browser to drop the studio cookie (with the
// attributes it was set with).
func (a *API) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: a.secure(r), MaxAge: -1})
}

// secure reports whether the browser reached the hub over HTTPS: the hub
// serves TLS itself, the configuration says every request did
// (Config.SecureCookie), or a trusted proxy (Config.TrustedProxies) says
// so in X-Forwarded-Proto.
func (a *API) secure(r *http.Request) bool {
	if r.TLS != nil || a.cfg.SecureCookie {
		return true
	}
	// The first of a list is what the browser used (each proxy appends).
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	if len(a.cfg.TrustedProxies) == 0 || !strings.EqualFold(strings.TrimSpace(proto), "https") {
		return false
	}
	ip, err := netip.ParseAddr(clientIP(r))
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range a.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// processCollector exports process liveness at scrape time.
type processCollector struct {
	svc *liveness.Service
	log *slog.Logger
}

var (
	aliveDesc = prometheus.NewDesc("cks_processes_alive",
		"Agent process instances whose last heartbeat is within 3 liveness intervals, by kind.",
		[]string{"process_kind"}, nil)
	instancesDesc = prometheus.NewDesc("cks_process_instances",
		"Agent process instances ever recorded, by kind and computed status.",
		[]string{"process_kind", "status"}, nil)
)

func (c *processCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- aliveDesc
	ch <- instancesDesc
}

func (c *processCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	alive, stopped, err := c.svc.Counts(ctx)
	if err != nil {
		c.log.Error("metrics: count processes", "err", err)
		ch <- prometheus.NewInvalidMetric(aliveDesc, err)
		return
	}
	for kind, n := range alive {
		ch <- prometheus.MustNewConstMetric(aliveDesc, prometheus.GaugeValue, float64(n), kind)
		if n > 0 {
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), kind, string(cks.ProcessAlive))
		}
	}
	for kind, n := range stopped {
		if n > 0 {
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), kind, string(cks.ProcessStopped))
		}
	}
}

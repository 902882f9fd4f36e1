// Package api is the HTTP face of a cks hub: the JSON API under /v1, Server-Sent
// Events at /v1/events, Prometheus metrics, health, and bearer-token auth in
// front of everything else it mounts (the MCP endpoint and the studio). It holds
// no behaviour of its own: every answer comes from the service packages.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/clock"
	"github.com/cks-dev/cks/events"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/sweeper"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CookieName is the cookie in which the studio keeps a browser's token.
const CookieName = "cks_token"

// Config is what the API serves from.
type Config struct {
	Liveness *liveness.Service
	// Tasks is the task ledger with its operator controls (ADR 0020); when
	// nil the /v1/tasks endpoints are absent. A store.Store satisfies it.
	Tasks TaskStore
	// Objects is the knowledge store (ADR-007); when nil the /v1/objects
	// endpoints are absent. A store.Store satisfies it.
	Objects ObjectStore
	// Sweepers controls this process's sweepers; when nil /v1/sweepers is absent.
	Sweepers *sweeper.Controller
	// Collectors are extra Prometheus collectors served at /metrics.
	Collectors []prometheus.Collector
	// Clock tells the time for time-relative filters (default the system clock).
	Clock clock.Clock
	Auth  *auth.Authenticator
	Bus   *events.Bus
	// MCP, when set, is mounted at /mcp behind auth.
	MCP http.Handler
	// Studio, when set, is mounted at / behind auth; its /login and /static/
	// routes are public.
	Studio  http.Handler
	Logger  *slog.Logger
	Version string
	// KeepAlive is the SSE comment interval (default 15 s).
	KeepAlive time.Duration
	// Health, when set, is the store's StorageHealth: /healthz answers 503
	// "degraded" while it fails (its result is reused for HealthTTL).
	Health func(context.Context) error
	// WriteTimeout is the HTTP server's write timeout, if it has one: the
	// event stream and /mcp lift it, and a stop or update that waits for an
	// abort confirmation extends it by its wait.
	WriteTimeout time.Duration
}

// TaskStore is what the task endpoints need of a store: the ledger, its
// operator controls, and the change notifications the bounded wait for an
// abort confirmation listens to.
type TaskStore interface {
	store.Tasks
	store.TaskControl
	store.Changes
}

// API is the hub's HTTP handler.
type API struct {
	cfg     Config
	control *ledger.Control // nil when cfg.Tasks is nil
	authz   *auth.Authorizer
	routes  []Route
	mux     *http.ServeMux
	streams context.Context // cancelled when the server starts shutting down
	closeSt context.CancelFunc
	health  healthCache
}

// New builds the handler.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Bus == nil {
		cfg.Bus = &events.Bus{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	a := &API{cfg: cfg, mux: http.NewServeMux(), authz: auth.NewAuthorizer(cfg.Auth.Principals())}
	a.streams, a.closeSt = context.WithCancel(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&processCollector{svc: cfg.Liveness, log: cfg.Logger})
	reg.MustRegister(cfg.Collectors...)
	if cfg.Sweepers != nil {
		reg.MustRegister(sweeperCollector{reg: cfg.Sweepers.Registry()})
	}

	// Public.
	a.mux.HandleFunc("GET /healthz", a.healthz)
	a.mux.HandleFunc("POST /login", a.login)
	a.mux.HandleFunc("POST /logout", a.logout)
	// Authenticated, each with the permission it needs (see Routes).
	a.route("GET /metrics", auth.PermRead, auth.ResourceRoot, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	a.route("GET /v1/processes", auth.PermRead, auth.ResourceProcesses, http.HandlerFunc(a.listProcesses))
	a.route("GET /v1/processes/{kind}", auth.PermRead, "/processes/{kind}", http.HandlerFunc(a.processStatus))
	a.routeProcessStop()
	a.route("GET /v1/events", auth.PermRead, auth.ResourceRoot, http.HandlerFunc(a.events))
	if cfg.Tasks != nil {
		a.control = ledger.NewControl(cfg.Tasks)
		a.routeTasks()
	}
	if cfg.Sweepers != nil {
		a.routeSweepers()
	}
	if cfg.Objects != nil {
		a.routeObjects()
	}
	a.routeTokens()
	a.mux.Handle("/v1/", a.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})))
	if cfg.MCP != nil {
		// Each MCP tool checks its own permission with the same Authorizer,
		// through the principal authenticate puts in the request context.
		// It streams its answers (server-sent events), so the server's
		// timeouts are lifted for it as for /v1/events.
		a.mux.Handle("/mcp", a.authed(streaming(cfg.MCP)))
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
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Field names the offending input field of an invalid_argument error.
		Field string `json:"field,omitempty"`
	} `json:"error"`
}

// WriteError writes {"error":{"code":…,"message":…}} with status.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) //nolint:errcheck // the client went away
}

// fail maps a service error to a status and code.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *store.FieldError
	switch {
	case errors.As(err, &fe):
		var b ErrorBody
		b.Error.Code, b.Error.Message, b.Error.Field = "invalid_argument", err.Error(), fe.Field
		writeJSON(w, http.StatusBadRequest, b)
	case errors.Is(err, store.ErrInvalid):
		WriteError(w, http.StatusBadRequest, "invalid_argument", err.Error())
	case errors.Is(err, sweeper.ErrDisabledByConfig):
		WriteError(w, http.StatusConflict, "disabled_by_config", err.Error())
	case errors.Is(err, store.ErrLeaseLost):
		WriteError(w, http.StatusConflict, "lease_lost", err.Error())
	case errors.Is(err, store.ErrNotFound), errors.Is(err, sweeper.ErrUnknownSweeper):
		WriteError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, store.ErrConflict):
		WriteError(w, http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, auth.ErrUnauthenticated):
		WriteError(w, http.StatusUnauthorized, "unauthenticated", err.Error())
	case errors.Is(err, auth.ErrForbidden):
		WriteError(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		// The storage's failure, not the request's: nothing was written,
		// and the same request may succeed once the storage is fixed.
		code, what := storageState(err)
		a.cfg.Logger.Error("storage fault", "method", r.Method, "path", r.URL.Path, "storage", code, "err", err)
		WriteError(w, http.StatusServiceUnavailable, "storage_"+code, "the hub's database "+what+"; nothing was written (see the hub log)")
	case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		// The client went away (e.g. during a stop's abort wait): not a
		// failure of the hub. The write goes nowhere; log it at debug.
		a.cfg.Logger.Debug("request abandoned by the client", "method", r.Method, "path", r.URL.Path, "err", err)
		WriteError(w, 499, "client_closed_request", err.Error())
	default:
		a.cfg.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		WriteError(w, http.StatusInternalServerError, "internal", "internal error; see the hub log")
	}
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
}

// healthCache keeps the last storage check of /healthz for HealthTTL, so
// frequent probes cost the database one check per TTL.
type healthCache struct {
	mu  sync.Mutex
	at  time.Time
	err error
	ok  bool // at and err hold a result
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ok", Version: a.cfg.Version}
	if a.cfg.Health == nil {
		writeJSON(w, http.StatusOK, h)
		return
	}
	h.Storage = "ok"
	if err := a.storageHealth(r.Context()); err != nil {
		code, what := storageState(err)
		h.Status, h.Storage, h.Message = "degraded", code, "the hub's database "+what
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// storageHealth runs cfg.Health at most once per HealthTTL (by cfg.Clock).
func (a *API) storageHealth(ctx context.Context) error {
	c := &a.health
	c.mu.Lock()
	defer c.mu.Unlock()
	now := a.cfg.Clock.Now()
	if c.ok && now.Sub(c.at) < HealthTTL {
		return c.err
	}
	check, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := a.cfg.Health(check)
	if ctx.Err() != nil {
		return err // the caller went away: nothing learnt, nothing cached
	}
	if err != nil {
		a.cfg.Logger.Warn("healthz: storage check", "err", err)
	}
	c.at, c.err, c.ok = now, err, true
	return err
}

// storageState names a storage fault for codes (storage_CODE, /healthz's
// storage) and says what it is.
func storageState(err error) (code, what string) {
	switch {
	case errors.Is(err, store.ErrStorageReadOnly):
		return "read_only", "refuses writes (it is read-only)"
	case errors.Is(err, store.ErrStorageFull):
		return "full", "has no space left for writes"
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable", "cannot take requests"
	}
	return "error", "could not be checked"
}

// ProcessList is the body of GET /v1/processes.
type ProcessList struct {
	Processes []liveness.Process `json:"processes"`
}

func (a *API) listProcesses(w http.ResponseWriter, r *http.Request) {
	ps, err := a.cfg.Liveness.ListProcesses(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if ps == nil {
		ps = []liveness.Process{}
	}
	writeJSON(w, http.StatusOK, ProcessList{Processes: ps})
}

func (a *API) processStatus(w http.ResponseWriter, r *http.Request) {
	p, err := a.cfg.Liveness.ProcessStatus(r.Context(), r.PathValue("kind"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// events streams bus events as Server-Sent Events until the client leaves or
// the server shuts down. Events carry no payload beyond their type and time:
// a client re-reads what it shows.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	clearDeadlines(w) // the stream lasts as long as its client
	ch, unsubscribe := a.cfg.Bus.Subscribe()
	defer unsubscribe()
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
		case <-keep.C:
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

// PrincipalFrom returns the authenticated principal of a request.
func PrincipalFrom(ctx context.Context) (store.Principal, bool) {
	return auth.PrincipalFrom(ctx)
}

// tokenOf reads the bearer token from the Authorization header, or else the
// studio cookie.
func tokenOf(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return "", errors.New("malformed Authorization header: expected \"Bearer <token>\"")
		}
		return strings.TrimSpace(tok), nil
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value, nil
	}
	return "", nil
}

func (a *API) authenticate(r *http.Request) (*http.Request, error) {
	tok, err := tokenOf(r)
	if err != nil {
		return r, errors.Join(err, auth.ErrUnauthenticated)
	}
	p, err := a.cfg.Auth.Authenticate(r.Context(), tok)
	if err != nil {
		return r, err
	}
	return r.WithContext(auth.WithPrincipal(r.Context(), a.authz, p)), nil
}

// authed answers 401 with a JSON error unless the request carries a valid token.
func (a *API) authed(next http.Handler) http.Handler {
	return a.requireAuth(next, func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cks"`)
		WriteError(w, http.StatusUnauthorized, "unauthenticated", err.Error())
	})
}

// authedPage sends a browser without a valid token to the login form, and
// answers 403 to a principal without read on what the page shows.
func (a *API) authedPage(next http.Handler) http.Handler {
	return a.requireAuth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, res := range StudioResources(r.URL.Path) {
			if err := auth.Require(r.Context(), auth.PermRead, res); err != nil {
				if !errors.Is(err, auth.ErrForbidden) {
					a.fail(w, r, err)
					return
				}
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	}), func(w http.ResponseWriter, r *http.Request, _ error) {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}

// StudioResources returns what a studio page at path shows, each of which the
// viewer needs read on: the agent panel (/) shows /processes and /sweepers,
// its fragments one each, the task board /tasks and a task page /tasks/ID.
// Any other path needs read on /.
func StudioResources(path string) []string {
	switch {
	case path == "/":
		return []string{auth.ResourceProcesses, auth.ResourceSweepers}
	case path == "/studio/processes":
		return []string{auth.ResourceProcesses}
	case path == "/studio/sweepers":
		return []string{auth.ResourceSweepers}
	case path == "/tasks":
		return []string{auth.ResourceTasks}
	}
	if id, ok := strings.CutPrefix(path, "/tasks/"); ok && auth.ValidResource(path) == nil {
		return []string{auth.ResourceTasks + "/" + id}
	}
	return []string{auth.ResourceRoot}
}

// requireAuth runs next for an authenticated request, denied for one without a
// valid token, and answers 500 when the token could not be checked at all.
func (a *API) requireAuth(next http.Handler, denied func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, err := a.authenticate(r)
		switch {
		case err == nil:
			next.ServeHTTP(w, r)
		case errors.Is(err, auth.ErrUnauthenticated):
			denied(w, r, err)
		default:
			a.fail(w, r, err)
		}
	})
}

func (a *API) login(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if _, err := a.cfg.Auth.Authenticate(r.Context(), tok); err != nil {
		if !errors.Is(err, auth.ErrUnauthenticated) {
			a.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/login?error=1", http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 30 * 24 * 3600})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *API) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
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
	ps, err := c.svc.ListProcesses(ctx)
	if err != nil {
		c.log.Error("metrics: list processes", "err", err)
		ch <- prometheus.NewInvalidMetric(aliveDesc, err)
		return
	}
	for kind, n := range liveness.CountAlive(ps) {
		ch <- prometheus.MustNewConstMetric(aliveDesc, prometheus.GaugeValue, float64(n), kind)
	}
	type key struct{ kind, status string }
	counts := map[key]int{}
	for _, p := range ps {
		counts[key{p.ProcessKind, string(p.Status)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), k.kind, k.status)
	}
}

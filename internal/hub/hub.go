// Package hub assembles one `cks serve` process: it opens the store, makes sure
// an admin token exists, starts the background loops that feed the event bus,
// and serves the HTTP API, the MCP endpoint and the studio until its context
// ends, then shuts down gracefully.
package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/telemetry"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/api"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// DefaultListen is the address a hub listens on unless told otherwise
// (CKS_LISTEN's default).
const DefaultListen = config.DefaultListen

// Config is how one hub runs.
type Config struct {
	// DatabaseURL names the store; empty means the data directory's SQLite file.
	DatabaseURL string
	DataDir     datadir.Dir
	Listen      string
	Version     string
	Logger      *slog.Logger
	// Clock, when set, is the hub's clock (tests); nil: the backend's,
	// the database's clock on Postgres (backend.Backend.Clock).
	Clock clock.Clock
	// WatchInterval is how often process liveness is re-read to publish
	// change events (default 1 s).
	WatchInterval time.Duration
	// ShutdownTimeout bounds the graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// Settings are the hub's sweepers', ledger's, retention's, leadership's
	// and pipeline's (config.ParseHub); Settings without Sweepers (the zero
	// value) are taken for none given: every default (config.DefaultHub).
	Settings config.Hub
	// HTTP bounds client connections (config.ParseHTTP); its zero fields
	// take their defaults (config.HTTP.WithDefaults).
	HTTP config.HTTP
	// LLM is the model of the pipeline when Settings.Pipeline.InProcess
	// (config.ParseLLM; zero: the offline model).
	LLM config.LLM
	// TestClock makes the hub's host clock wrong on purpose, for the
	// tests of the clock correction (config.ParseTestClock); zero: none.
	TestClock config.TestClock
}

// Ready describes a hub that has started serving.
type Ready struct {
	URL          string
	Backend      string
	TokenFile    string
	TokenCreated bool
}

// Run serves until ctx ends. It calls onReady (if non-nil) once the listener,
// store and token are in place. A bad listen address or database is reported
// before anything is written to disk or the database, and so is a database
// the hub cannot write. One hub serves from a data directory at a time: Run
// holds its lock (datadir.Lock) while it serves and refuses a directory
// another hub holds, naming that hub's URL.
func Run(ctx context.Context, cfg Config, onReady func(Ready)) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DataDir == "" {
		cfg.DataDir = datadir.Default
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = cfg.DataDir.DatabaseURL()
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	log := cfg.Logger

	settings := cfg.Settings
	if settings.Sweepers == nil {
		settings = config.DefaultHub()
	}
	if settings.RetentionArchive == "" {
		settings.RetentionArchive = filepath.Join(string(cfg.DataDir), config.DefaultArchive)
	}
	httpSet := cfg.HTTP.WithDefaults()
	ln, err := Listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	ln = LimitConns(ln, httpSet.MaxConnsPerIP, log)

	clockOpts := backend.ClockOptions(cfg.TestClock)
	if cfg.Clock != nil {
		// An injected clock is the clock of everything the hub runs, the
		// services' writes included: a stop stamped by one clock and judged
		// stale by another would mislead the test that injected it.
		clockOpts = append(clockOpts, driver.WithClock(cfg.Clock))
	}
	st, err := backend.Open(ctx, cfg.DatabaseURL, clockOpts...)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Tasks.Configure(settings.Ledger); err != nil {
		return err
	}
	// The task metrics of /metrics: what this hub's claims and attempt
	// ends were (ledger.Observer).
	taskObs := newTaskMetrics()
	// With tracing on (OTEL_*, off by default), the observer is a Tracer
	// over the metrics that exports the tasks' spans; off, it is the
	// metrics alone and nothing traces (telemetry.Start).
	obs, stopTracing, err := telemetry.Start(ctx, settings.Tracing, taskObs, log)
	if err != nil {
		return err
	}
	defer func() {
		// The spans not yet exported are flushed, for at most the
		// shutdown timeout.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn("flushing the traces at shutdown", "err", err)
		}
	}()
	st.Tasks.ObserveWith(obs)
	if cfg.Clock == nil {
		// The database's clock on Postgres (backend.Clock): liveness and
		// leases are judged by the clock the agents stamped them with.
		cfg.Clock = st.Clock()
	}
	if err := st.StorageHealth(ctx); err != nil {
		// A hub that cannot write would answer every write with an error:
		// refuse to start instead, saying why.
		return fmt.Errorf("cannot serve from this database: %w", err)
	}
	lock, err := cfg.DataDir.Lock()
	if errors.Is(err, datadir.ErrLocked) {
		other := "another hub"
		if u, uerr := cfg.DataDir.ReadURL(); uerr == nil {
			other += " (" + u + ")"
		}
		return fmt.Errorf("%s already serves from data directory %s: one hub per data directory; stop it, or give this hub "+
			"another --data-dir (%w)", other, cfg.DataDir, err)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	for _, e := range cfg.DataDir.Exposed() {
		log.Warn("other users may read the data directory, which holds task payloads and the admin token; "+
			"cks leaves existing modes alone: chmod go-rwx it", "path", e.Path, "mode", e.Mode)
	}

	created, err := auth.EnsureAdminToken(ctx, st.Principals, cfg.DataDir, cfg.Clock)
	if err != nil {
		return err
	}
	if created {
		log.Info("admin token created", "file", cfg.DataDir.TokenFile())
	}

	url := "http://" + reachable(ln.Addr())
	if err := cfg.DataDir.WriteURL(url); err != nil {
		return fmt.Errorf("write %s: %w", cfg.DataDir.URLFile(), err)
	}
	defer func() {
		if got, _ := cfg.DataDir.ReadURL(); got == url {
			cfg.DataDir.RemoveURL() //nolint:errcheck // best effort
		}
	}()

	sweepRuns := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "cks_sweeper_run_duration_seconds",
		Help:    "Duration of sweeper passes, by sweeper.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"agent_id"})
	rt, err := NewRuntime(st, RuntimeConfig{Clock: cfg.Clock, Logger: log, Settings: settings, WatchInterval: cfg.WatchInterval,
		OnSweep: func(id string, d time.Duration, _ int, _ error) { sweepRuns.WithLabelValues(id).Observe(d.Seconds()) }})
	if err != nil {
		return err
	}
	if err := rt.Start(ctx); err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := rt.Stop(cctx); err != nil {
			log.Warn("stopping sweepers", "err", err)
		}
	}()

	if settings.Pipeline.InProcess {
		// The research pipeline in this process (ADR-007 §5): its step
		// events go on the hub's bus, so /v1/events carries them.
		orch, err := NewPipeline(PipelineConfig{Store: st.Objects, Changes: st.Changes, Settings: settings.Pipeline, LLM: cfg.LLM,
			DefaultLease: settings.Ledger.DefaultLease, Bus: rt.Bus, Logger: log.With("component", "pipeline"), Name: "hub"})
		if err != nil {
			return err
		}
		// A service like the others: started here, stopped (its workers
		// waited for) when the hub returns.
		if err := orch.Start(ctx); err != nil && ctx.Err() == nil { // an ending hub starts nothing
			return fmt.Errorf("start the pipeline: %w", err)
		}
		defer func() {
			if err := orch.Stop(context.WithoutCancel(ctx)); err != nil {
				log.Error("stop the pipeline", "err", err)
			}
		}()
	}

	// One table of operations serves /v1, /mcp and the studio's reads,
	// over one set of services built here for every surface.
	svc := &ops.Services{Liveness: rt.Liveness, Tasks: st.Tasks, Objects: st.Objects,
		Sweepers: rt.Sweepers, Principals: st.Principals, Schedules: st.Schedules, Bus: rt.Bus, Changes: rt.cfg.Changes, Clock: cfg.Clock, Logger: log}
	mcpHTTP := mcpserver.NewHTTP(mcpserver.NewServerWith(cfg.Version, svc, mcpserver.ServerOptions{ProgressEvery: httpSet.MCPProgressInterval}),
		mcpserver.HTTPOptions{MaxSessions: httpSet.MCPMaxSessions, MaxSessionsPerToken: httpSet.MCPMaxSessionsPerToken,
			IdleTimeout: httpSet.MCPSessionIdle, UnsubscribedIdleTimeout: httpSet.MCPUnsubscribedSessionIdle,
			KeepAlive: httpSet.EventKeepAlive, Clock: cfg.Clock})
	defer mcpHTTP.Close()
	a := api.New(api.Config{
		Services: svc,
		MCP:      mcpHTTP,
		Studio:   studio.New(svc, studio.Options{Version: cfg.Version, StaleStopAfter: settings.StaleStopThreshold}),
		Logger:   log,
		Version:  cfg.Version,
		URL:      url,
		Collectors: append([]prometheus.Collector{sweepRuns, newUnclaimedCollector(svc), newLimitCollector(svc), prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cks_mcp_sessions",
			Help: "The MCP sessions /mcp holds open (at most CKS_MCP_MAX_SESSIONS, CKS_MCP_MAX_SESSIONS_PER_TOKEN a token)."},
			func() float64 { return float64(mcpHTTP.Open()) }),
			claimsWaiting(st.Tasks), newTaskCounts(st.Tasks), taskObs}, clockGauges(st)...),
		Health: st.StorageHealth,
		Leader: rt.Leader,

		ClockCorrection: st.ClockCorrection,

		WriteTimeout: httpSet.WriteTimeout, // lifted by streams, extended by abort waits
		KeepAlive:    httpSet.EventKeepAlive,

		SecureCookie:      httpSet.SecureCookie,
		TrustedProxies:    httpSet.TrustedProxies,
		PipelineInProcess: settings.Pipeline.InProcess,
	})

	srv := &http.Server{
		Handler:           a,
		ReadHeaderTimeout: httpSet.ReadHeaderTimeout,
		ReadTimeout:       httpSet.ReadTimeout,
		WriteTimeout:      httpSet.WriteTimeout,
		IdleTimeout:       httpSet.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(a.CloseStreams)
	srv.RegisterOnShutdown(mcpHTTP.Close) // the MCP sessions' GET streams
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	log.Info("hub serving", "url", url, "backend", st.Dialect(), "database", backend.RedactURL(cfg.DatabaseURL), "data_dir", string(cfg.DataDir))
	if onReady != nil {
		onReady(Ready{URL: url, Backend: st.Dialect(), TokenFile: cfg.DataDir.TokenFile(), TokenCreated: created})
	}

	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("hub shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown incomplete; closing connections", "err", err)
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("hub stopped")
	return nil
}

// clockGauges show the correction of the hub's clock to the database's
// (backend.Backend.ClockCorrection): the offset in use and how uncertain
// its measurement is (half its round trip); both 0 when nothing is
// corrected (SQLite: one host).
func clockGauges(st *backend.Backend) []prometheus.Collector {
	read := func(f func(m clock.Measurement) time.Duration) func() float64 {
		return func() float64 {
			m, _ := st.ClockCorrection()
			return f(m).Seconds()
		}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cks_clock_offset_seconds",
			Help: "The database's clock minus this host's, as last measured: what the hub adds to its host's clock to stamp and judge heartbeats and leases."},
			read(func(m clock.Measurement) time.Duration { return m.Offset })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cks_clock_offset_uncertainty_seconds",
			Help: "Half the round trip of the measurement of cks_clock_offset_seconds: the most it can be off by."},
			read(func(m clock.Measurement) time.Duration { return m.RTT / 2 })),
	}
}

// Listen opens a TCP listener on addr, with an error that says what was expected.
func Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("bad --listen address %q: expected HOST:PORT, e.g. %s", addr, DefaultListen)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %q: %w (expected a free HOST:PORT, e.g. %s)", addr, err, DefaultListen)
	}
	return ln, nil
}

// reachable turns a wildcard listen address into one a local client can dial.
func reachable(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
}

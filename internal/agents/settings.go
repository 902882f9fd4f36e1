package agents

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// Settings are one agent process's knobs (DESIGN §6). Each kind reads them
// from the environment under its own prefix (SettingsFromEnv); flags of the
// same names override them (RegisterFlags).
type Settings struct {
	// Kind is the process kind: critic, enrichment, fork_resolution,
	// pipeline or exec.
	Kind string
	// Types are the task types the agent claims; none means it claims
	// nothing (a kind whose resolver is not wired yet just reports liveness
	// and obeys stop).
	Types []string
	// PollInterval is the wait between claims when there was no work; new
	// work (cks.TopicTasksReady) or a stop ends the wait early.
	PollInterval time.Duration
	// HeartbeatInterval renews the lease of the task being worked; it is
	// independent of LivenessInterval (ADR-014). SettingsFromEnv defaults it
	// to the seeds' 60 s or a third of StaleWindow, whichever is shorter, so
	// that a short default lease alone is enough to shorten recovery.
	HeartbeatInterval time.Duration
	// LivenessInterval is the process heartbeat (ADR-014).
	LivenessInterval time.Duration
	// MaxRetries is deprecated: a task's max_attempts is how often it is
	// tried. When it is 0 or more, a failure on attempt MaxRetries+1 or
	// later is made permanent even though the task has attempts left (the
	// agent warns at start); -1, the default, leaves it to max_attempts.
	MaxRetries int
	// StaleWindow is CKS_STALE_WINDOW, the default lease of the ledger
	// (ledger.Settings.DefaultLease, which the hubs read from the same
	// variable): the agent derives its default heartbeat from it. Its own
	// lease is Lease.
	StaleWindow time.Duration
	// Lease is the lease a claim asks for: three heartbeats, so the
	// heartbeat renews it every third of it. A dead agent's task is taken
	// back by the next claim once it ran out.
	Lease time.Duration
	// DrainTimeout bounds the drain after a stop (SIGTERM, SIGINT, a stop
	// request): the task in hand may finish for that long, then it is
	// interrupted and given back to the ledger — OPEN again, its attempt
	// not counted — and the agent exits. 0 waits for the task without
	// bound.
	DrainTimeout time.Duration
	// Concurrency is how many tasks the agent works at once (1 to
	// MaxConcurrency): one process, one liveness row, up to this many
	// leases, claimed together when several slots are free.
	Concurrency int
}

// MaxConcurrency bounds Settings.Concurrency: more tasks at once belong in
// more processes (each holds leases, heartbeats and, for exec, children).
const MaxConcurrency = 256

// EnvStaleWindow is the default lease's variable, shared with the hub.
const EnvStaleWindow = ledger.EnvStaleWindow

// DefaultDrainTimeout is how long a stopped agent lets the task in hand
// finish: well inside the stop timeouts of the usual supervisors (systemd
// 90 s, Kubernetes 30 s) with the exec agent's kill grace (5 s) on top,
// so that the attempt is given back before the supervisor kills.
const DefaultDrainTimeout = 20 * time.Second

// envPrefix is each kind's variable prefix (the seeds' names).
var envPrefix = map[string]string{
	"critic":          "CKS_CRITIC_",
	"enrichment":      "CKS_ENRICHMENT_",
	"fork_resolution": "CKS_FORK_AGENT_",
	"pipeline":        "CKS_PIPELINE_",
	"exec":            "CKS_EXEC_",
}

// Kinds lists the agent kinds, sorted (liveness.KnownKinds).
func Kinds() []string { return liveness.KnownKinds() }

// UnknownKindError is returned for an agent kind outside Kinds. It
// matches cks.ErrInvalid.
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown agent kind %q; expected one of %s", e.Kind, strings.Join(Kinds(), ", "))
}

// Unwrap makes errors.Is(err, cks.ErrInvalid) hold.
func (e *UnknownKindError) Unwrap() error { return cks.ErrInvalid }

// Defaults returns the seed defaults for kind: poll 5 s (30 s for
// fork_resolution), heartbeat 60 s, liveness 30 s, drain 20 s, no retry
// cap of the agent's own.
func Defaults(kind string) (Settings, error) {
	if _, ok := envPrefix[kind]; !ok {
		return Settings{}, &UnknownKindError{Kind: kind}
	}
	s := Settings{Kind: kind, PollInterval: 5 * time.Second, HeartbeatInterval: defaultHeartbeat,
		LivenessInterval: liveness.DefaultInterval, MaxRetries: -1, StaleWindow: ledger.DefaultLease,
		DrainTimeout: DefaultDrainTimeout, Concurrency: 1}
	if kind == "fork_resolution" {
		s.PollInterval = 30 * time.Second
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return s, nil
}

// defaultHeartbeat is the seeds' lease heartbeat.
const defaultHeartbeat = 60 * time.Second

// leaseHeartbeats is how many lease heartbeats a lease lasts: a lease
// survives two late or failed renewals.
const leaseHeartbeats = 3

// leaseFor is the lease a claim asks for: what the ledger holds the agent
// to (a lease that ran out unrenewed is the next claim's), so a dead
// agent's task waits three heartbeats.
func leaseFor(heartbeat time.Duration) time.Duration {
	return leaseHeartbeats * heartbeat
}

// EnvName is the variable that sets field (POLL_INTERVAL, HEARTBEAT_INTERVAL,
// LIVENESS_INTERVAL, DRAIN_TIMEOUT, CONCURRENCY, MAX_RETRIES, TYPES) for
// kind, e.g. CKS_FORK_AGENT_POLL_INTERVAL.
func EnvName(kind, field string) string { return envPrefix[kind] + field }

// SettingsFromEnv returns kind's defaults overridden by its environment
// variables (getenv is os.Getenv in a process), and the default lease of
// CKS_STALE_WINDOW (read as the hub reads it: ledger.SettingsFromEnv).
// Every duration is seconds ("30", "0.5", as the seeds write them) or a Go
// duration ("30s"), alike for every variable (cks.ParseDuration). A bad
// value is an error naming the variable.
func SettingsFromEnv(kind string, getenv func(string) string) (Settings, error) {
	s, err := Defaults(kind)
	if err != nil {
		return s, err
	}
	for _, d := range []struct {
		field string
		dst   *time.Duration
		zero  bool // 0 is a value
	}{{"POLL_INTERVAL", &s.PollInterval, false}, {"HEARTBEAT_INTERVAL", &s.HeartbeatInterval, false},
		{"LIVENESS_INTERVAL", &s.LivenessInterval, false}, {"DRAIN_TIMEOUT", &s.DrainTimeout, true}} {
		name := EnvName(kind, d.field)
		if v := getenv(name); v != "" {
			parse := ParseInterval
			if d.zero {
				parse = cks.ParseDuration
			}
			if *d.dst, err = parse(v); err != nil {
				return s, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if v := getenv(EnvName(kind, "MAX_RETRIES")); v != "" {
		if s.MaxRetries, err = parseRetries(v); err != nil {
			return s, fmt.Errorf("%s: %w", EnvName(kind, "MAX_RETRIES"), err)
		}
	}
	if v := getenv(EnvName(kind, "CONCURRENCY")); v != "" {
		if s.Concurrency, err = parseConcurrency(v); err != nil {
			return s, fmt.Errorf("%s: %w", EnvName(kind, "CONCURRENCY"), err)
		}
	}
	if v := getenv(EnvName(kind, "TYPES")); v != "" {
		s.Types = SplitTypes(v)
	}
	led, err := ledger.SettingsFromEnv(getenv)
	if err != nil {
		return s, err
	}
	s.StaleWindow = led.DefaultLease
	if getenv(EnvName(kind, "HEARTBEAT_INTERVAL")) == "" {
		s.HeartbeatInterval = min(defaultHeartbeat, s.StaleWindow/leaseHeartbeats)
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return s, nil
}

// ParseInterval reads a positive duration written as seconds ("30", "0.5")
// or as a Go duration ("30s", "500ms"): cks.ParseDuration, 0 refused.
func ParseInterval(v string) (time.Duration, error) {
	d, err := cks.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("expected a positive interval: seconds (e.g. 30 or 0.5) or a duration (e.g. 30s), got %q", v)
	}
	return d, nil
}

// SplitTypes splits a comma-separated list of task types, dropping blanks
// and duplicates.
func SplitTypes(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// IntervalFlag is a flag.Value over d that reads a positive duration as
// every duration setting of cks is read (ParseInterval: seconds or a Go
// duration).
func IntervalFlag(d *time.Duration) flag.Value { return intervalFlag{d: d} }

// intervalFlag is a flag.Value over a Settings duration; zero accepts 0.
type intervalFlag struct {
	d    *time.Duration
	zero bool
}

func (f intervalFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f intervalFlag) Set(v string) error {
	parse := ParseInterval
	if f.zero {
		parse = cks.ParseDuration
	}
	d, err := parse(v)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// parseRetries reads the deprecated Settings.MaxRetries: 0 or more.
func parseRetries(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("expected a non-negative integer, got %q", v)
	}
	return n, nil
}

// parseConcurrency reads Settings.Concurrency: 1 to MaxConcurrency.
func parseConcurrency(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxConcurrency {
		return 0, fmt.Errorf("expected a whole number of tasks at once from 1 to %d, got %q", MaxConcurrency, v)
	}
	return n, nil
}

// intFlag is a flag.Value over an integer setting read by parse (the
// variable's parser), shown empty when unset (below 0: MaxRetries' -1).
type intFlag struct {
	n     *int
	parse func(string) (int, error)
}

func (f intFlag) String() string {
	if f.n == nil || *f.n < 0 {
		return ""
	}
	return strconv.Itoa(*f.n)
}

func (f intFlag) Set(v string) error {
	n, err := f.parse(v)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// typesFlag is a flag.Value over Settings.Types.
type typesFlag struct{ ts *[]string }

func (f typesFlag) String() string {
	if f.ts == nil {
		return ""
	}
	return strings.Join(*f.ts, ",")
}

func (f typesFlag) Set(v string) error {
	*f.ts = SplitTypes(v)
	return nil
}

// RegisterFlags adds flags that override s (already filled from the
// environment, so the defaults shown are the effective ones): --poll-interval,
// --heartbeat-interval, --liveness-interval, --drain-timeout, --types,
// --concurrency, and the deprecated --max-retries. Call Finish after parsing.
func (s *Settings) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(intervalFlag{d: &s.PollInterval}, "poll-interval", "wait `DURATION` between claims when idle (env "+EnvName(s.Kind, "POLL_INTERVAL")+")")
	fs.Var(intervalFlag{d: &s.HeartbeatInterval}, "heartbeat-interval",
		"lease heartbeat `DURATION` of the task being worked; the lease asked for is three of them (env "+EnvName(s.Kind, "HEARTBEAT_INTERVAL")+
			"; default 60s or a third of "+EnvStaleWindow+", whichever is shorter)")
	fs.Var(intervalFlag{d: &s.LivenessInterval}, "liveness-interval", "process liveness heartbeat `DURATION` (env "+EnvName(s.Kind, "LIVENESS_INTERVAL")+")")
	fs.Var(intervalFlag{d: &s.DrainTimeout, zero: true}, "drain-timeout",
		"on stop, let the task in hand finish for up to `DURATION`, then interrupt it and give it back (OPEN, its attempt not counted); "+
			"0 waits without bound (env "+EnvName(s.Kind, "DRAIN_TIMEOUT")+")")
	fs.Var(intFlag{&s.MaxRetries, parseRetries}, "max-retries", "DEPRECATED: a task's max_attempts decides its retries; `N` makes a failure permanent "+
		"from attempt N+1 on (env "+EnvName(s.Kind, "MAX_RETRIES")+")")
	fs.Var(typesFlag{&s.Types}, "types", "comma-separated task types `T1,T2` to claim (env "+EnvName(s.Kind, "TYPES")+")")
	fs.Var(intFlag{&s.Concurrency, parseConcurrency}, "concurrency", fmt.Sprintf("work up to `N` tasks at once in this one process, 1 to %d (env %s)",
		MaxConcurrency, EnvName(s.Kind, "CONCURRENCY")))
}

// Finish validates s after flags were applied and derives the lease
// (three heartbeats, within the ledger's bounds).
func (s *Settings) Finish() error {
	s.Lease = leaseFor(s.HeartbeatInterval)
	if s.Lease < ledger.MinLease || s.Lease > ledger.MaxLease {
		return fmt.Errorf("lease heartbeat %s (%s / --heartbeat-interval) makes a lease of %s (%d heartbeats), outside the ledger's %s to %s",
			s.HeartbeatInterval, EnvName(s.Kind, "HEARTBEAT_INTERVAL"), s.Lease, leaseHeartbeats, ledger.MinLease, ledger.MaxLease)
	}
	return nil
}

// MaxRetriesDeprecation is the warning an agent logs at start when the
// deprecated MaxRetries is set ("" when it is not).
func (s Settings) MaxRetriesDeprecation() string {
	if s.MaxRetries < 0 {
		return ""
	}
	return fmt.Sprintf("--max-retries / %s is deprecated: a task's max_attempts decides how often it is tried; "+
		"this agent still makes a failure permanent from attempt %d on", EnvName(s.Kind, "MAX_RETRIES"), s.MaxRetries+1)
}

package agents

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/liveness"
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
	// that a short window alone is enough to shorten recovery.
	HeartbeatInterval time.Duration
	// LivenessInterval is the process heartbeat (ADR-014).
	LivenessInterval time.Duration
	// MaxRetries is how many times a task this agent failed is retried: a
	// failure on attempt MaxRetries+1 or later is permanent.
	MaxRetries int
	// StaleWindow is the lease reaper's stale window, the hub's
	// CKS_STALE_WINDOW (ledger.DefaultStaleWindow when unset): a lease not
	// renewed for that long is reclaimed. The agent reads the same variable
	// only to check that its heartbeat fits (Finish); the hub's reaper is
	// what applies it.
	StaleWindow time.Duration
	// Lease is the lease a claim asks for: three heartbeats. Finish keeps it
	// within StaleWindow, so that the window, not the lease, is how long a
	// dead agent's task waits before it is reclaimed.
	Lease time.Duration
}

// EnvStaleWindow is the stale window's variable, shared with the hub.
const EnvStaleWindow = "CKS_STALE_WINDOW"

// StaleWindowFromEnv is the stale window EnvStaleWindow sets —
// ledger.DefaultStaleWindow when unset — as the hub and every agent read
// it: one parser, so that all accept the same values and refuse a bad one
// with the same words.
func StaleWindowFromEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv(EnvStaleWindow)
	if v == "" {
		return ledger.DefaultStaleWindow, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: expected a positive duration such as 5m or 15s", EnvStaleWindow, v)
	}
	return d, nil
}

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

// Defaults returns the seed defaults for kind: poll 5 s (30 s for
// fork_resolution), heartbeat 60 s, liveness 30 s, 3 retries.
func Defaults(kind string) (Settings, error) {
	if _, ok := envPrefix[kind]; !ok {
		return Settings{}, &liveness.UnknownKindError{Kind: kind}
	}
	s := Settings{Kind: kind, PollInterval: 5 * time.Second, HeartbeatInterval: defaultHeartbeat,
		LivenessInterval: liveness.DefaultInterval, MaxRetries: 3, StaleWindow: ledger.DefaultStaleWindow}
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

// leaseFor is the lease a claim asks for. It is not stretched to the stale
// window: the reaper reclaims only a lease that has expired and has not been
// renewed within the window (ledger.Service.ReclaimExpired), so the window
// already bounds recovery from below, and a longer lease would only make a
// dead agent's task wait longer than the window that was configured.
func leaseFor(heartbeat time.Duration) time.Duration {
	return leaseHeartbeats * heartbeat
}

// EnvName is the variable that sets field (POLL_INTERVAL, HEARTBEAT_INTERVAL,
// LIVENESS_INTERVAL, MAX_RETRIES, TYPES) for kind, e.g.
// CKS_FORK_AGENT_POLL_INTERVAL.
func EnvName(kind, field string) string { return envPrefix[kind] + field }

// SettingsFromEnv returns kind's defaults overridden by its environment
// variables (getenv is os.Getenv in a process), and the stale window of
// CKS_STALE_WINDOW. Durations are seconds ("30", "0.5", as the seeds write
// them) or Go durations ("30s"); CKS_STALE_WINDOW is a Go duration, as the
// hub reads it. A bad value is an error naming the variable. Whether the
// heartbeat fits the window is checked by Finish, once flags had their say.
func SettingsFromEnv(kind string, getenv func(string) string) (Settings, error) {
	s, err := Defaults(kind)
	if err != nil {
		return s, err
	}
	for _, d := range []struct {
		field string
		dst   *time.Duration
	}{{"POLL_INTERVAL", &s.PollInterval}, {"HEARTBEAT_INTERVAL", &s.HeartbeatInterval}, {"LIVENESS_INTERVAL", &s.LivenessInterval}} {
		name := EnvName(kind, d.field)
		if v := getenv(name); v != "" {
			if *d.dst, err = ParseInterval(v); err != nil {
				return s, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if v := getenv(EnvName(kind, "MAX_RETRIES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("%s: expected a non-negative integer, got %q", EnvName(kind, "MAX_RETRIES"), v)
		}
		s.MaxRetries = n
	}
	if v := getenv(EnvName(kind, "TYPES")); v != "" {
		s.Types = SplitTypes(v)
	}
	if s.StaleWindow, err = StaleWindowFromEnv(getenv); err != nil {
		return s, err
	}
	if getenv(EnvName(kind, "HEARTBEAT_INTERVAL")) == "" {
		s.HeartbeatInterval = min(defaultHeartbeat, s.StaleWindow/leaseHeartbeats)
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return s, nil
}

// ParseInterval reads a positive duration written as seconds ("30", "0.5")
// or as a Go duration ("30s", "500ms").
func ParseInterval(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, fmt.Errorf("expected seconds (e.g. 30 or 0.5) or a duration (e.g. 30s), got %q", v)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("expected a positive interval, got %q", v)
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

// intervalFlag is a flag.Value over a Settings duration.
type intervalFlag struct{ d *time.Duration }

func (f intervalFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f intervalFlag) Set(v string) error {
	d, err := ParseInterval(v)
	if err != nil {
		return err
	}
	*f.d = d
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
// --heartbeat-interval, --liveness-interval, --max-retries, --types. Call
// Finish after parsing.
func (s *Settings) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(intervalFlag{&s.PollInterval}, "poll-interval", "wait `DURATION` between claims when idle (env "+EnvName(s.Kind, "POLL_INTERVAL")+")")
	fs.Var(intervalFlag{&s.HeartbeatInterval}, "heartbeat-interval",
		"lease heartbeat `DURATION` of the task being worked, at most a third of "+EnvStaleWindow+" (env "+EnvName(s.Kind, "HEARTBEAT_INTERVAL")+")")
	fs.Var(intervalFlag{&s.LivenessInterval}, "liveness-interval", "process liveness heartbeat `DURATION` (env "+EnvName(s.Kind, "LIVENESS_INTERVAL")+")")
	fs.IntVar(&s.MaxRetries, "max-retries", s.MaxRetries, "retries of a task this agent failed (env "+EnvName(s.Kind, "MAX_RETRIES")+")")
	fs.Var(typesFlag{&s.Types}, "types", "comma-separated task types `T1,T2` to claim (env "+EnvName(s.Kind, "TYPES")+")")
}

// Finish validates s after flags were applied and derives the lease. The
// heartbeat must be well inside the stale window — at most a third of it,
// so that the lease (three heartbeats) ends within the window: a longer one
// would make a dead agent's task wait three heartbeats instead of the window
// that was configured.
func (s *Settings) Finish() error {
	if s.MaxRetries < 0 {
		return fmt.Errorf("--max-retries: expected a non-negative integer, got %d", s.MaxRetries)
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	if s.Lease < ledger.MinLease || s.Lease > ledger.MaxLease {
		return fmt.Errorf("lease heartbeat %s (%s / --heartbeat-interval) makes a lease of %s (%d heartbeats), outside the ledger's %s to %s",
			s.HeartbeatInterval, EnvName(s.Kind, "HEARTBEAT_INTERVAL"), s.Lease, leaseHeartbeats, ledger.MinLease, ledger.MaxLease)
	}
	if s.Lease > s.StaleWindow {
		return fmt.Errorf("lease heartbeat %s (%s / --heartbeat-interval) is not well inside the stale window %s (%s): "+
			"it must be at most a third of the window (%s here), or a dead agent's task waits %d heartbeats (%s) instead of the window; "+
			"shorten the heartbeat or widen the window (the hub's %s)",
			s.HeartbeatInterval, EnvName(s.Kind, "HEARTBEAT_INTERVAL"), s.StaleWindow, EnvStaleWindow,
			s.StaleWindow/leaseHeartbeats, leaseHeartbeats, s.Lease, EnvStaleWindow)
	}
	return nil
}

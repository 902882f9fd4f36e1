package agents

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/store"
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
	// work (store.TopicTasksReady) or a stop ends the wait early.
	PollInterval time.Duration
	// HeartbeatInterval renews the lease of the task being worked; it is
	// independent of LivenessInterval (ADR-014).
	HeartbeatInterval time.Duration
	// LivenessInterval is the process heartbeat (ADR-014).
	LivenessInterval time.Duration
	// MaxRetries is how many times a task this agent failed is retried: a
	// failure on attempt MaxRetries+1 or later is permanent.
	MaxRetries int
	// Lease is the lease a claim asks for: at least store.DefaultStaleWindow
	// and three heartbeats.
	Lease time.Duration
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
	s := Settings{Kind: kind, PollInterval: 5 * time.Second, HeartbeatInterval: 60 * time.Second,
		LivenessInterval: liveness.DefaultInterval, MaxRetries: 3}
	if kind == "fork_resolution" {
		s.PollInterval = 30 * time.Second
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return s, nil
}

func leaseFor(heartbeat time.Duration) time.Duration {
	return max(store.DefaultStaleWindow, 3*heartbeat)
}

// EnvName is the variable that sets field (POLL_INTERVAL, HEARTBEAT_INTERVAL,
// LIVENESS_INTERVAL, MAX_RETRIES, TYPES) for kind, e.g.
// CKS_FORK_AGENT_POLL_INTERVAL.
func EnvName(kind, field string) string { return envPrefix[kind] + field }

// SettingsFromEnv returns kind's defaults overridden by its environment
// variables (getenv is os.Getenv in a process). Durations are seconds
// ("30", "0.5", as the seeds write them) or Go durations ("30s"). A bad value
// is an error naming the variable.
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
	fs.Var(intervalFlag{&s.PollInterval}, "poll-interval", "wait between claims when idle (env "+EnvName(s.Kind, "POLL_INTERVAL")+")")
	fs.Var(intervalFlag{&s.HeartbeatInterval}, "heartbeat-interval", "lease heartbeat of the task being worked (env "+EnvName(s.Kind, "HEARTBEAT_INTERVAL")+")")
	fs.Var(intervalFlag{&s.LivenessInterval}, "liveness-interval", "process liveness heartbeat (env "+EnvName(s.Kind, "LIVENESS_INTERVAL")+")")
	fs.IntVar(&s.MaxRetries, "max-retries", s.MaxRetries, "retries of a task this agent failed (env "+EnvName(s.Kind, "MAX_RETRIES")+")")
	fs.Var(typesFlag{&s.Types}, "types", "comma-separated task types to claim (env "+EnvName(s.Kind, "TYPES")+")")
}

// Finish validates s after flags were applied and derives the lease.
func (s *Settings) Finish() error {
	if s.MaxRetries < 0 {
		return fmt.Errorf("--max-retries: expected a non-negative integer, got %d", s.MaxRetries)
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return nil
}

package config

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// Agent are one agent process's knobs (DESIGN §6; agents.Settings). Each
// kind reads them from the environment under its own prefix (ParseAgent);
// flags of the same names override them (RegisterFlags).
type Agent struct {
	// Kind is the process kind: critic, enrichment, fork_resolution,
	// pipeline or exec.
	Kind string
	// Types are the task types the agent claims; none means it claims
	// nothing (a kind whose resolver is not wired yet just reports liveness
	// and obeys stop). ParseAgent defaults them to DefaultAgentTypes.
	Types []string
	// PollInterval is how long an idle claim waits in the ledger for work
	// (ledger.ClaimParams.Wait, at most ledger.MaxClaimWait) before the
	// agent claims again, and the wait after a failed claim; new work
	// (cks.TopicTasksReady), a delayed task becoming due or a stop ends the
	// wait early.
	PollInterval time.Duration
	// HeartbeatInterval renews the lease of the task being worked; it is
	// independent of LivenessInterval (ADR-014). ParseAgent defaults it
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
	// (Ledger.DefaultLease, which the hubs read from the same variable):
	// the agent derives its default heartbeat from it. Its own lease is
	// Lease.
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

// MaxConcurrency bounds Agent.Concurrency: more tasks at once belong in
// more processes (each holds leases, heartbeats and, for exec, children).
const MaxConcurrency = 256

// DefaultDrainTimeout is how long a stopped agent lets the task in hand
// finish: well inside the stop timeouts of the usual supervisors (systemd
// 90 s, Kubernetes 30 s) with the exec agent's kill grace (5 s) on top,
// so that the attempt is given back before the supervisor kills.
const DefaultDrainTimeout = 20 * time.Second

// DefaultLivenessInterval is the liveness interval of a process that
// names none (ADR-014 §2: 30 s, independent of the lease heartbeat;
// liveness.DefaultInterval).
const DefaultLivenessInterval = 30 * time.Second

// DefaultHeartbeat is the seeds' lease heartbeat.
const DefaultHeartbeat = 60 * time.Second

// LeaseHeartbeats is how many lease heartbeats a lease lasts: a lease
// survives two late or failed renewals.
const LeaseHeartbeats = 3

// agentPrefix is each kind's variable prefix (the seeds' names).
var agentPrefix = map[string]string{
	"critic":          "CKS_CRITIC_",
	"enrichment":      "CKS_ENRICHMENT_",
	"fork_resolution": "CKS_FORK_AGENT_",
	"pipeline":        "CKS_PIPELINE_",
	"exec":            "CKS_EXEC_",
}

// AgentKinds lists the agent kinds, sorted (liveness.KnownKinds).
func AgentKinds() []string { return slices.Sorted(maps.Keys(agentPrefix)) }

// UnknownKindError is returned for an agent kind outside AgentKinds. It
// matches cks.ErrInvalid.
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown agent kind %q; expected one of %s", e.Kind, strings.Join(AgentKinds(), ", "))
}

// Unwrap makes errors.Is(err, cks.ErrInvalid) hold.
func (e *UnknownKindError) Unwrap() error { return cks.ErrInvalid }

// DefaultAgent returns the seed defaults for kind: poll 5 s (30 s for
// fork_resolution), heartbeat 60 s, liveness 30 s, drain 20 s, no retry
// cap of the agent's own, no task types.
func DefaultAgent(kind string) (Agent, error) {
	if _, ok := agentPrefix[kind]; !ok {
		return Agent{}, &UnknownKindError{Kind: kind}
	}
	s := Agent{Kind: kind, PollInterval: 5 * time.Second, HeartbeatInterval: DefaultHeartbeat,
		LivenessInterval: DefaultLivenessInterval, MaxRetries: -1, StaleWindow: DefaultLease,
		DrainTimeout: DefaultDrainTimeout, Concurrency: 1}
	if kind == "fork_resolution" {
		s.PollInterval = 30 * time.Second
	}
	s.Lease = leaseFor(s.HeartbeatInterval)
	return s, nil
}

// DefaultAgentTypes returns the task types agent kind claims unless
// CKS_<AGENT>_TYPES or --types say otherwise: critic → critique, enrichment
// → rederive and enrich, fork_resolution → resolve_fork; none for the other
// kinds (pipeline works objects, not tasks; exec needs --types).
func DefaultAgentTypes(kind string) []string {
	switch kind {
	case "critic":
		return []string{cks.TaskTypeCritique}
	case "enrichment":
		return []string{cks.TaskTypeRederive, cks.TaskTypeEnrich}
	case "fork_resolution":
		return []string{cks.TaskTypeResolveFork}
	}
	return nil
}

// leaseFor is the lease a claim asks for: what the ledger holds the agent
// to (a lease that ran out unrenewed is the next claim's), so a dead
// agent's task waits three heartbeats.
func leaseFor(heartbeat time.Duration) time.Duration {
	return LeaseHeartbeats * heartbeat
}

// AgentEnv is the variable that sets field (POLL_INTERVAL,
// HEARTBEAT_INTERVAL, LIVENESS_INTERVAL, DRAIN_TIMEOUT, CONCURRENCY,
// MAX_RETRIES, TYPES) for kind, e.g. CKS_FORK_AGENT_POLL_INTERVAL.
func AgentEnv(kind, field string) string { return agentPrefix[kind] + field }

// ParseAgent returns kind's defaults overridden by its environment
// variables (getenv nil: an empty environment), its task types
// DefaultAgentTypes when none are set, and the default lease of
// CKS_STALE_WINDOW (read as the hub reads it: ParseLedger). Every
// duration is seconds ("30", "0.5", as the seeds write them) or a Go
// duration ("30s"), alike for every variable (cks.ParseDuration). A bad
// value is an error naming the variable.
func ParseAgent(kind string, getenv Getenv) (Agent, error) {
	getenv = orEmpty(getenv)
	s, err := DefaultAgent(kind)
	if err != nil {
		return s, err
	}
	for _, d := range []struct {
		field string
		dst   *time.Duration
		zero  bool // 0 is a value
	}{{"POLL_INTERVAL", &s.PollInterval, false}, {"HEARTBEAT_INTERVAL", &s.HeartbeatInterval, false},
		{"LIVENESS_INTERVAL", &s.LivenessInterval, false}, {"DRAIN_TIMEOUT", &s.DrainTimeout, true}} {
		name := AgentEnv(kind, d.field)
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
	if v := getenv(AgentEnv(kind, "MAX_RETRIES")); v != "" {
		if s.MaxRetries, err = parseRetries(v); err != nil {
			return s, fmt.Errorf("%s: %w", AgentEnv(kind, "MAX_RETRIES"), err)
		}
	}
	if v := getenv(AgentEnv(kind, "CONCURRENCY")); v != "" {
		if s.Concurrency, err = parseConcurrency(v); err != nil {
			return s, fmt.Errorf("%s: %w", AgentEnv(kind, "CONCURRENCY"), err)
		}
	}
	if v := getenv(AgentEnv(kind, "TYPES")); v != "" {
		s.Types = SplitTypes(v)
	}
	if len(s.Types) == 0 {
		// critic → critique, enrichment → rederive and enrich,
		// fork_resolution → resolve_fork.
		s.Types = DefaultAgentTypes(kind)
	}
	led, err := ParseLedger(getenv)
	if err != nil {
		return s, err
	}
	s.StaleWindow = led.DefaultLease
	if getenv(AgentEnv(kind, "HEARTBEAT_INTERVAL")) == "" {
		s.HeartbeatInterval = min(DefaultHeartbeat, s.StaleWindow/LeaseHeartbeats)
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

// intervalFlag is a flag.Value over an Agent duration; zero accepts 0.
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

// parseRetries reads the deprecated Agent.MaxRetries: 0 or more.
func parseRetries(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("expected a non-negative integer, got %q", v)
	}
	return n, nil
}

// parseConcurrency reads Agent.Concurrency: 1 to MaxConcurrency.
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

// typesFlag is a flag.Value over Agent.Types.
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
func (s *Agent) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(intervalFlag{d: &s.PollInterval}, "poll-interval", "wait `DURATION` between claims when idle (env "+AgentEnv(s.Kind, "POLL_INTERVAL")+")")
	fs.Var(intervalFlag{d: &s.HeartbeatInterval}, "heartbeat-interval",
		"lease heartbeat `DURATION` of the task being worked; the lease asked for is three of them (env "+AgentEnv(s.Kind, "HEARTBEAT_INTERVAL")+
			"; default 60s or a third of "+EnvStaleWindow+", whichever is shorter)")
	fs.Var(intervalFlag{d: &s.LivenessInterval}, "liveness-interval", "process liveness heartbeat `DURATION` (env "+AgentEnv(s.Kind, "LIVENESS_INTERVAL")+")")
	fs.Var(intervalFlag{d: &s.DrainTimeout, zero: true}, "drain-timeout",
		"on stop, let the task in hand finish for up to `DURATION`, then interrupt it and give it back (OPEN, its attempt not counted); "+
			"0 waits without bound (env "+AgentEnv(s.Kind, "DRAIN_TIMEOUT")+")")
	fs.Var(intFlag{&s.MaxRetries, parseRetries}, "max-retries", "DEPRECATED: a task's max_attempts decides its retries; `N` makes a failure permanent "+
		"from attempt N+1 on (env "+AgentEnv(s.Kind, "MAX_RETRIES")+")")
	fs.Var(typesFlag{&s.Types}, "types", "comma-separated task types `T1,T2` to claim (env "+AgentEnv(s.Kind, "TYPES")+")")
	fs.Var(intFlag{&s.Concurrency, parseConcurrency}, "concurrency", fmt.Sprintf("work up to `N` tasks at once in this one process, 1 to %d (env %s)",
		MaxConcurrency, AgentEnv(s.Kind, "CONCURRENCY")))
}

// Finish validates s after flags were applied and derives the lease
// (three heartbeats, within the ledger's bounds).
func (s *Agent) Finish() error {
	s.Lease = leaseFor(s.HeartbeatInterval)
	if s.Lease < MinLease || s.Lease > MaxLease {
		return fmt.Errorf("lease heartbeat %s (%s / --heartbeat-interval) makes a lease of %s (%d heartbeats), outside the ledger's %s to %s",
			s.HeartbeatInterval, AgentEnv(s.Kind, "HEARTBEAT_INTERVAL"), s.Lease, LeaseHeartbeats, MinLease, MaxLease)
	}
	return nil
}

// MaxRetriesDeprecation is the warning an agent logs at start when the
// deprecated MaxRetries is set ("" when it is not).
func (s Agent) MaxRetriesDeprecation() string {
	if s.MaxRetries < 0 {
		return ""
	}
	return fmt.Sprintf("--max-retries / %s is deprecated: a task's max_attempts decides how often it is tried; "+
		"this agent still makes a failure permanent from attempt %d on", AgentEnv(s.Kind, "MAX_RETRIES"), s.MaxRetries+1)
}

// agentSettings are every agent kind's own, under its prefix, and the
// agents' flags.
func agentSettings() []Setting {
	var t []Setting
	for _, k := range AgentKinds() {
		r := agentWords(k)
		name := func(f string) string { return AgentEnv(k, f) }
		t = append(t,
			Setting{Env: name("TYPES"), Flag: "types", Readers: r, Doc: "the task types the " + k + " agent claims",
				Value: func(v *Values) string { return strings.Join(v.Agents[k].Types, ",") }},
			Setting{Env: name("POLL_INTERVAL"), Flag: "poll-interval", Readers: r, Doc: "the longest an idle claim waits in the ledger for work before it claims again (at most 60s; new and due tasks end the wait at once)",
				Value: func(v *Values) string { return dur(v.Agents[k].PollInterval) }},
			Setting{Env: name("HEARTBEAT_INTERVAL"), Flag: "heartbeat-interval", Readers: r,
				Doc: "the lease heartbeat of the task being worked; the agent's lease is three heartbeats " +
					"(default 60s, or a third of CKS_STALE_WINDOW if that is shorter)",
				Value: func(v *Values) string { return dur(v.Agents[k].HeartbeatInterval) }},
			Setting{Env: name("LIVENESS_INTERVAL"), Flag: "liveness-interval", Readers: r, Doc: "the process liveness heartbeat",
				Value: func(v *Values) string { return dur(v.Agents[k].LivenessInterval) }},
			Setting{Env: name("DRAIN_TIMEOUT"), Flag: "drain-timeout", Readers: r,
				Doc: "on stop, how long the task in hand may finish before it is interrupted and given back (OPEN, its " +
					"attempt not counted); 0 waits without bound",
				Value: func(v *Values) string { return dur(v.Agents[k].DrainTimeout) }},
			Setting{Env: name("CONCURRENCY"), Flag: "concurrency", Readers: r,
				Doc:   fmt.Sprintf("how many tasks the agent works at once, in its one process (1 to %d)", MaxConcurrency),
				Value: func(v *Values) string { return strconv.Itoa(v.Agents[k].Concurrency) }},
			Setting{Env: name("MAX_RETRIES"), Flag: "max-retries", Readers: r,
				Doc: "DEPRECATED (a task's max_attempts decides its retries): when set, a failure from attempt N+1 on is " +
					"made permanent; unset, max_attempts alone decides",
				Value: func(v *Values) string {
					if n := v.Agents[k].MaxRetries; n >= 0 {
						return strconv.Itoa(n)
					}
					return "unset"
				}},
		)
	}
	all := agentWords(AgentKinds()...)
	return append(t,
		Setting{Flag: "no-fast-stop", Readers: all, Default: "false",
			Doc: "obey stop requests only at the liveness tick (for measurements)"},
		Setting{Flag: "create", Readers: all, Default: "false",
			Doc: "create the SQLite database when it does not exist; without it an agent refuses a missing one " +
				"(it would wait on a new, empty database for tasks no hub gives it)"})
}

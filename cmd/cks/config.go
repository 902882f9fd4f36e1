package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/service/llm"
	"github.com/cks-dev/cks/internal/surface/mcpserver"
)

// The configuration of cks is one table (configTable): every environment
// variable and configuration flag of the hub, the agents and the CLI, with
// its default, meaning and readers. The parsers stay where they are (hub,
// agents, sweeper, llm, the commands' flag sets); config_test.go holds them
// to the table both ways — a variable a parser reads, or a CKS_ name in the
// source, that the table lacks fails it, and so does an entry no parser
// reads, a configuration flag of a command the table lacks, or a default
// the table says that the parser does not apply. `cks config` prints the
// effective values through the same parsers; docs/configuration.md is
// generated from the table.

// setting is one row of the configuration table.
type setting struct {
	// env is the variable ("" for a flag only), flag the flag's name
	// without dashes ("" for a variable only).
	env, flag string
	// readers are the command words that read it: "serve", "dev", "mcp",
	// "agent KIND", or "client" for every command that calls a hub.
	readers []string
	// flagOn, when set, are the readers that take the flag (the others
	// read only the variable).
	flagOn  []string
	meaning string
	// secret: its value is never printed, only whether it is set.
	secret bool
	// def is the default as text; when empty and value is set, the
	// default is value of an empty environment (so that it cannot drift).
	def string
	// value is the effective value from the parsed environment; nil:
	// the variable's text, or def.
	value func(v *configValues) string
}

// configValues are the environment as the parsers read it.
type configValues struct {
	getenv   func(string) string
	hub      hub.Settings
	http     hub.HTTPSettings
	pipeline hub.PipelineSettings
	agent    map[string]agents.Settings
	// errs are the parsers' refusals of bad values.
	errs []error
}

// parseConfig runs every parser of the configuration over getenv.
func parseConfig(getenv func(string) string) *configValues {
	v := &configValues{getenv: getenv, agent: map[string]agents.Settings{}}
	var err error
	if v.hub, err = hub.ParseSettings(getenv); err != nil {
		v.errs = append(v.errs, err)
	}
	if v.http, err = hub.ParseHTTPSettings(getenv); err != nil {
		v.errs = append(v.errs, err)
	}
	if v.pipeline, err = hub.ParsePipelineSettings(getenv); err != nil {
		v.errs = append(v.errs, err)
	}
	for _, k := range agents.Kinds() {
		s, err := agents.SettingsFromEnv(k, getenv)
		if err != nil {
			v.errs = append(v.errs, err)
			continue
		}
		if len(s.Types) == 0 {
			s.Types = agents.DefaultTypes(k)
		}
		v.agent[k] = s
	}
	if _, err := llm.FromEnv(getenv); err != nil {
		v.errs = append(v.errs, err)
	}
	// A variable several parsers read (CKS_STALE_WINDOW: the hub's and
	// every agent's) is refused once.
	v.errs = slices.CompactFunc(slices.SortedStableFunc(slices.Values(v.errs), func(a, b error) int {
		return strings.Compare(a.Error(), b.Error())
	}), func(a, b error) bool { return a.Error() == b.Error() })
	return v
}

// configTable is the configuration of cks, in the order of
// docs/configuration.md.
func configTable() []setting {
	return slices.Concat(commonSettings(), httpSettings(), ledgerSettings(), sweeperSettings(), pipelineSettings(), agentSettings())
}

// hubReaders are the commands that run a hub.
func hubReaders() []string { return []string{"serve", "dev"} }

func dur(d time.Duration) string { return d.String() }

// ageOrOff is an age of the retention sweeper, "off" for 0.
func ageOrOff(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

// commonSettings are the data directory, the database, the addresses and
// tokens, the flags of dev and mcp, and the hub's own knobs (its HTTP
// server's in httpSettings).
func commonSettings() []setting {
	allAgents := agentWords(agents.Kinds()...)
	hubs := hubReaders()
	return []setting{
		{env: "CKS_DATA_DIR", flag: "data-dir", readers: append(append([]string{"client", "mcp", "backup", "restore", "config"}, hubs...), allAgents...),
			meaning: "the data directory: the SQLite file, the admin token (admin.token) and the serving hub's URL (hub.url)",
			def:     "the nearest " + datadir.Default + " here or above, else ./" + datadir.Default},
		{env: "CKS_DATABASE_URL", flag: "database", readers: append(append([]string{"mcp", "backup", "restore", "doctor"}, hubs...), allAgents...),
			meaning: "the database: a file path, sqlite:PATH, postgres://… or a libpq keyword/value string host=… dbname=… (a password in it is never printed); " +
				"`cks dev` ignores the variable (only its flag); `cks process list` reads it when no hub answers",
			def:   "the data directory's cks.db",
			value: func(v *configValues) string { return backend.RedactURL(v.getenv("CKS_DATABASE_URL")) }},
		{env: "CKS_LISTEN", flag: "listen", readers: hubs, meaning: "the hub's address HOST:PORT", def: hub.DefaultListen},
		{env: "CKS_URL", flag: "url", readers: []string{"client", "mcp"}, meaning: "the hub a client calls",
			def: "the data directory's hub.url"},
		{env: "CKS_TOKEN", flag: "token", readers: []string{"client", "mcp"}, secret: true,
			meaning: "the bearer token of a client", def: "the data directory's admin.token (for its own hub only)"},
		{flag: "embedded", readers: []string{"mcp"}, def: "false",
			meaning: "serve MCP from the database without a hub (no sweepers)"},
		{flag: "all-tools", readers: []string{"mcp"}, def: "false",
			meaning: "list every tool of the hub, not only those the token may call"},
		{flag: "no-agents", readers: []string{"dev"}, def: "false", meaning: "`cks dev` starts the hub alone"},
		{flag: "agent-grace", readers: []string{"dev"}, def: "10s",
			meaning: "how long `cks dev` waits at Ctrl-C for its agents to finish their tasks; then they interrupt them and " +
				"give them back (attempts not counted), and are killed if they have not exited 15s later"},
		{flag: "exec-types", readers: []string{"dev"},
			meaning: "task types of the exec agent `cks dev` starts with the command after --"},

		{env: "CKS_STALE_STOP_THRESHOLD", readers: hubs, meaning: "when a STOPPED task is reported by the stale stop sweeper",
			value: func(v *configValues) string { return dur(v.hub.StaleStopThreshold) }},
		{env: "CKS_RETENTION", readers: hubs,
			meaning: "the age past which the retention sweeper prunes operational history (liveness rows of stopped " +
				"instances, recorded sweeper passes): 7d, 168h, or 0/off to keep it",
			value: func(v *configValues) string { return ageOrOff(v.hub.Retention) }},
		{env: "CKS_RETENTION_TASKS", readers: hubs,
			meaning: "the age past which the retention sweeper archives (CKS_RETENTION_ARCHIVE) and then deletes terminal " +
				"tasks with their events; 0/off keeps every task (audit data)",
			value: func(v *configValues) string { return ageOrOff(v.hub.RetentionTasks) }},
		{env: "CKS_RETENTION_KNOWLEDGE", readers: hubs,
			meaning: "the age past which the retention sweeper archives (knowledge.jsonl beside CKS_RETENTION_ARCHIVE) and then " +
				"deletes the transition-log entries of knowledge objects in a final status (resolved, needs_input); the objects, " +
				"versions and edges stay; 0/off keeps the whole log (audit data)",
			value: func(v *configValues) string { return ageOrOff(v.hub.RetentionKnowledge) }},
		{env: "CKS_RETENTION_ARCHIVE", readers: hubs,
			meaning: "the file (JSON lines, one task with its events, evidence and aborts a line) the retention sweeper " +
				"appends old tasks to before it deletes them",
			def: "DIR/" + hub.DefaultArchive + " of the data directory DIR"},
		{env: "CKS_LEADER_TTL", readers: hubs,
			meaning: "the lease of the maintenance leadership: a killed leader is replaced within it plus a third of it",
			value:   func(v *configValues) string { return dur(v.hub.LeaderTTL) }},
	}
}

// httpSettings are the hub's HTTP server's and its MCP endpoint's.
func httpSettings() []setting {
	hubs := hubReaders()
	return []setting{
		{env: "CKS_HTTP_READ_TIMEOUT", readers: hubs, meaning: "how long a request may take to arrive",
			value: func(v *configValues) string { return dur(orDur(v.http.ReadTimeout, hub.DefaultReadTimeout)) }},
		{env: "CKS_HTTP_WRITE_TIMEOUT", readers: hubs, meaning: "how long an answer may take (streams lift it)",
			value: func(v *configValues) string { return dur(orDur(v.http.WriteTimeout, hub.DefaultWriteTimeout)) }},
		{env: "CKS_HTTP_IDLE_TIMEOUT", readers: hubs, meaning: "how long an idle keep-alive connection stays open",
			value: func(v *configValues) string { return dur(orDur(v.http.IdleTimeout, hub.DefaultIdleTimeout)) }},
		{env: "CKS_MCP_MAX_SESSIONS", readers: hubs,
			meaning: "MCP sessions /mcp keeps open at once (an initialize over it closes the longest-idle one)",
			value: func(v *configValues) string {
				return strconv.Itoa(cmp.Or(v.http.MCPMaxSessions, mcpserver.DefaultMaxSessions))
			}},
		{env: "CKS_MCP_MAX_SESSIONS_PER_TOKEN", readers: hubs,
			meaning: "MCP sessions one token holds at once (its initialize over it closes its own longest-idle one)",
			value: func(v *configValues) string {
				return strconv.Itoa(cmp.Or(v.http.MCPMaxSessionsPerToken, mcpserver.DefaultMaxSessionsPerToken))
			}},
		{env: "CKS_MCP_SESSION_IDLE_TIMEOUT", readers: hubs,
			meaning: "how long an MCP session holding subscriptions stays open idle (no request in flight, no GET stream open)",
			value:   func(v *configValues) string { return dur(orDur(v.http.MCPSessionIdle, mcpserver.DefaultSessionIdle)) }},
		{env: "CKS_MCP_UNSUBSCRIBED_SESSION_IDLE_TIMEOUT", readers: hubs,
			meaning: "how long an MCP session holding no subscription stays open idle",
			value: func(v *configValues) string {
				return dur(orDur(v.http.MCPUnsubscribedSessionIdle, mcpserver.DefaultUnsubscribedSessionIdle))
			}},
		{env: "CKS_MCP_PROGRESS_INTERVAL", readers: hubs,
			meaning: "the interval of the progress notifications of an MCP call that waits (a stop awaiting an abort confirmation)",
			value: func(v *configValues) string {
				return dur(orDur(v.http.MCPProgressInterval, mcpserver.DefaultProgressEvery))
			}},
		{env: hub.EnvSecureCookie, readers: hubs,
			meaning: "mark the studio's session cookie Secure on every answer: set it when browsers reach the hub through a " +
				"TLS-terminating proxy only (else the cookie is Secure when the hub serves TLS itself or a trusted proxy says HTTPS)",
			value: func(v *configValues) string { return strconv.FormatBool(v.http.SecureCookie) }},
		{env: hub.EnvTrustedProxies, readers: hubs,
			meaning: "the proxies (IP addresses or CIDR prefixes, comma-separated) whose X-Forwarded-Proto: https marks the " +
				"studio's cookie Secure; the header of any other client is ignored",
			value: func(v *configValues) string {
				var ps []string
				for _, p := range v.http.TrustedProxies {
					ps = append(ps, p.String())
				}
				return strings.Join(ps, ",")
			}},
		{env: "CKS_HTTP_MAX_CONNS_PER_IP", readers: hubs, meaning: "open connections of one client IP (0: no cap): every agent, " +
			"browser tab and MCP client behind one address (a NAT, a proxy, one host's 500 agents) shares it — raise it, or set 0, " +
			"for such a fleet",
			value: func(v *configValues) string {
				switch n := v.http.MaxConnsPerIP; {
				case n < 0:
					return "0"
				case n == 0:
					return strconv.Itoa(hub.DefaultMaxConnsPerIP)
				default:
					return strconv.Itoa(n)
				}
			}},
	}
}

// ledgerSettings are the ledger's, which the hubs and the agents read
// alike (ledger.SettingsFromEnv).
func ledgerSettings() []setting {
	readers := append(hubReaders(), agentWords(agents.Kinds()...)...)
	return []setting{
		{env: ledger.EnvStaleWindow, readers: readers,
			meaning: "the default lease: the lease of a claim that names none (claim_tasks without lease_s) and of a pipeline " +
				"object claim; an agent's default heartbeat is a third of it (at most 60s). A lease of any length ends when it " +
				"runs out unrenewed: the next claim takes the task back",
			value: func(v *configValues) string { return dur(v.hub.Ledger.DefaultLease) }},
		{env: ledger.EnvRetryBackoff, readers: readers,
			meaning: "the delay before a task whose attempt failed retryably may be claimed again: this after the first " +
				"attempt, doubling with each further one up to 1h, plus up to a quarter of jitter; 0 retries at once",
			value: func(v *configValues) string { return dur(v.hub.Ledger.RetryBackoff) }},
	}
}

// sweeperSettings are each sweeper's enablement and interval.
func sweeperSettings() []setting {
	var t []setting
	hubs := hubReaders()
	for _, id := range sweeperIDs() {
		en, iv := sweeper.EnvNames(id)
		t = append(t,
			setting{env: en, readers: hubs, meaning: "whether the " + id + " sweeper runs (true/false)",
				value: func(v *configValues) string { return strconv.FormatBool(v.hub.Sweepers[id].Enabled) }},
			setting{env: iv, readers: hubs, meaning: "the interval of the " + id + " sweeper's passes",
				value: func(v *configValues) string { return dur(v.hub.Sweepers[id].Interval) }})
	}
	return t
}

// pipelineSettings are the research pipeline's and the model's.
func pipelineSettings() []setting {
	hubs := hubReaders()
	pipe := append(hubReaders(), "agent pipeline")
	pipeFlag := []string{"agent pipeline"}
	t := []setting{}
	t = append(t,
		setting{env: hub.EnvPipelineInProcess, readers: hubs, meaning: "the hub runs the research pipeline in its own process",
			value: func(v *configValues) string { return strconv.FormatBool(v.pipeline.InProcess) }},
		setting{env: hub.EnvPipelineCorpus, flag: "corpus", readers: pipe, flagOn: pipeFlag, meaning: "the default corpus directory of .md/.txt files",
			def: "the corpus shipped in the binary"},
		setting{env: hub.EnvPipelineWorkers, flag: "workers", readers: pipe, flagOn: pipeFlag, meaning: "workers per pipeline step",
			value: func(v *configValues) string { return strconv.Itoa(v.pipeline.Workers) }},
		setting{env: hub.EnvPipelinePoll, flag: "poll", readers: pipe, flagOn: pipeFlag, meaning: "the fallback poll of the step workers",
			value: func(v *configValues) string { return dur(v.pipeline.Poll) }},
		setting{env: hub.EnvPipelineMaxRounds, flag: "max-rounds", readers: pipe, flagOn: pipeFlag,
			meaning: "rounds before an unresolved question parks in needs_input",
			value:   func(v *configValues) string { return strconv.Itoa(v.pipeline.MaxRounds) }},
	)
	llmReaders := append(append([]string{}, hubs...), agentWords("critic", "fork_resolution", "pipeline")...)
	t = append(t,
		setting{env: "CKS_LLM_PROVIDER", readers: llmReaders, meaning: "the model: offline (rules, no network) or openai (any OpenAI-compatible server)",
			def: "offline"},
		setting{env: "CKS_LLM_BASE_URL", readers: llmReaders, meaning: "the OpenAI-compatible server", def: llm.DefaultOpenAIBaseURL},
		setting{env: "CKS_LLM_MODEL", readers: llmReaders, meaning: "the model's name (required for openai)"},
		setting{env: "CKS_LLM_API_KEY", readers: llmReaders, secret: true, meaning: "the server's API key (local servers often need none)"},
		setting{env: "CKS_LLM_TIMEOUT", readers: llmReaders, meaning: "the timeout of one HTTP attempt", def: "60s"},
	)
	return t
}

// agentSettings are every agent kind's own, under its prefix.
func agentSettings() []setting {
	var t []setting
	for _, k := range agents.Kinds() {
		r := agentWords(k)
		name := func(f string) string { return agents.EnvName(k, f) }
		t = append(t,
			setting{env: name("TYPES"), flag: "types", readers: r, meaning: "the task types the " + k + " agent claims",
				value: func(v *configValues) string { return strings.Join(v.agent[k].Types, ",") }},
			setting{env: name("POLL_INTERVAL"), flag: "poll-interval", readers: r, meaning: "the wait between claims when idle",
				value: func(v *configValues) string { return dur(v.agent[k].PollInterval) }},
			setting{env: name("HEARTBEAT_INTERVAL"), flag: "heartbeat-interval", readers: r,
				meaning: "the lease heartbeat of the task being worked; the agent's lease is three heartbeats " +
					"(default 60s, or a third of CKS_STALE_WINDOW if that is shorter)",
				value: func(v *configValues) string { return dur(v.agent[k].HeartbeatInterval) }},
			setting{env: name("LIVENESS_INTERVAL"), flag: "liveness-interval", readers: r, meaning: "the process liveness heartbeat",
				value: func(v *configValues) string { return dur(v.agent[k].LivenessInterval) }},
			setting{env: name("DRAIN_TIMEOUT"), flag: "drain-timeout", readers: r,
				meaning: "on stop, how long the task in hand may finish before it is interrupted and given back (OPEN, its " +
					"attempt not counted); 0 waits without bound",
				value: func(v *configValues) string { return dur(v.agent[k].DrainTimeout) }},
			setting{env: name("CONCURRENCY"), flag: "concurrency", readers: r,
				meaning: fmt.Sprintf("how many tasks the agent works at once, in its one process (1 to %d)", agents.MaxConcurrency),
				value:   func(v *configValues) string { return strconv.Itoa(v.agent[k].Concurrency) }},
			setting{env: name("MAX_RETRIES"), flag: "max-retries", readers: r,
				meaning: "DEPRECATED (a task's max_attempts decides its retries): when set, a failure from attempt N+1 on is " +
					"made permanent; unset, max_attempts alone decides",
				value: func(v *configValues) string {
					if n := v.agent[k].MaxRetries; n >= 0 {
						return strconv.Itoa(n)
					}
					return "unset"
				}},
		)
	}
	t = append(t, setting{flag: "no-fast-stop", readers: agentWords(agents.Kinds()...), def: "false",
		meaning: "obey stop requests only at the liveness tick (for measurements)"},
		setting{flag: "create", readers: agentWords(agents.Kinds()...), def: "false",
			meaning: "create the SQLite database when it does not exist; without it an agent refuses a missing one " +
				"(it would wait on a new, empty database for tasks no hub gives it)"})
	return t
}

// sweeperIDs are the hub's sweepers, sorted.
func sweeperIDs() []string {
	s, _ := hub.ParseSettings(nil)
	var ids []string
	for id := range s.Sweepers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func agentWords(kinds ...string) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, "agent "+k)
	}
	return out
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// defaultOf is s's default: def, or its value in an empty environment.
func (s setting) defaultOf() string {
	if s.def != "" || s.value == nil {
		return s.def
	}
	return s.value(parseConfig(func(string) string { return "" }))
}

// configEntry is one row of `cks config --json`.
type configEntry struct {
	Env     string   `json:"env,omitempty"`
	Flag    string   `json:"flag,omitempty"`
	Value   string   `json:"value"`
	Source  string   `json:"source"`
	Default string   `json:"default"`
	Secret  bool     `json:"secret,omitempty"`
	Readers []string `json:"readers"`
	Meaning string   `json:"meaning"`
}

// configReport is `cks config --json`.
type configReport struct {
	DataDir  string        `json:"data_dir"`
	Settings []configEntry `json:"settings"`
	Errors   []string      `json:"errors"`
}

// effectiveConfig is the configuration getenv makes: each variable's
// effective value (secrets as set/unset) and where it came from.
func effectiveConfig(getenv func(string) string, dir datadir.Dir) configReport {
	v := parseConfig(getenv)
	r := configReport{DataDir: string(dir), Settings: []configEntry{}, Errors: []string{}}
	for _, err := range v.errs {
		r.Errors = append(r.Errors, err.Error())
	}
	for _, s := range configTable() {
		if s.env == "" {
			continue // a flag only: one command line's, not this host's
		}
		e := configEntry{Env: s.env, Flag: s.flag, Source: "default", Default: s.defaultOf(), Secret: s.secret,
			Readers: s.readers, Meaning: s.meaning}
		raw := getenv(s.env)
		if raw != "" {
			e.Source = "env"
		}
		switch {
		case s.secret && raw != "":
			e.Value = "set"
		case s.secret:
			e.Value = "unset"
		case s.value != nil:
			e.Value = s.value(v)
		case raw != "":
			e.Value = raw
		default:
			e.Value = e.Default
		}
		if s.env == "CKS_DATA_DIR" {
			e.Value = string(dir)
		}
		r.Settings = append(r.Settings, e)
	}
	return r
}

// errConfig marks a configuration a parser refuses.
var errConfig = errors.New("bad configuration")

// cmdConfig is `cks config`: the effective configuration of this host's
// environment, through the parsers of the hub and the agents.
func cmdConfig(_ context.Context, args []string, e env) error {
	fs := flagSet("config", e)
	dirFlag := fs.String("data-dir", "", "data directory `DIR` (env CKS_DATA_DIR; default the nearest "+datadir.Default+" here or above)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	r := effectiveConfig(e.getenv, dataDir(*dirFlag, e))
	if *asJSON {
		if err := printJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		printConfig(e.stdout, r)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%w: %s", errConfig, strings.Join(r.Errors, "; "))
	}
	return nil
}

func printConfig(w io.Writer, r configReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tFLAG\tVALUE\tSOURCE")
	for _, s := range r.Settings {
		fl := ""
		if s.Flag != "" {
			fl = "--" + s.Flag
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Env, fl, s.Value, s.Source)
	}
	tw.Flush()
}

// configMarkdown is docs/configuration.md, from the table.
func configMarkdown() string {
	var b strings.Builder
	b.WriteString("# Configuration\n\n" +
		"<!-- Generated from the configuration table (cmd/cks/config.go): go test ./cmd/cks -run TestConfigDoc -update -->\n\n" +
		"Every environment variable and configuration flag of the hub (`cks serve`, `cks dev`), the agents\n" +
		"(`cks agent KIND`) and the CLI. A flag wins over its variable. `cks config` prints the effective\n" +
		"values of this environment (`--json`; secrets only as set or unset) and exits 1 if a value is refused.\n" +
		"Durations are Go durations (`30s`, `5m`); the agents' intervals and the sweepers' also take seconds (`30`).\n" +
		"A reader `client` is every command that calls a hub.\n\n" +
		"| Variable | Flag | Default | Read by | Meaning |\n|---|---|---|---|---|\n")
	for _, s := range configTable() {
		cell := func(x string) string {
			if x == "" {
				return ""
			}
			return "`" + x + "`"
		}
		fl := ""
		if s.flag != "" {
			fl = "`--" + s.flag + "`"
		}
		def := s.defaultOf()
		if def != "" && !strings.Contains(def, " ") {
			def = cell(def)
		}
		meaning := s.meaning
		if s.secret {
			meaning += " (secret: never printed)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(s.env), fl, def, strings.Join(s.readers, ", "),
			strings.ReplaceAll(meaning, "|", "\\|"))
	}
	return b.String()
}

// Package config is the configuration of cks: every CKS_* environment
// variable and configuration flag of the hub, the agents and the CLI, one
// row each of one table (Table: its name, flag, readers, default and
// meaning), and the parsers that read them into one struct per component —
// Common (the data directory, the database, the hub's address and a
// client's), Hub (the sweepers, the ledger, retention, the leadership, the
// pipeline), HTTP (the hub's server and its MCP endpoint), Ledger, Pipeline,
// LLM, Agent (each agent kind's) and TestClock. The defaults and bounds of
// the settings are this package's constants; the packages that apply them
// name them.
//
// No package below the commands reads the environment: the commands
// (cmd/cks) parse it here and hand each component its struct (a test holds
// every CKS_ read to this package). `cks config` prints the table's
// effective values and docs/configuration.md is generated from it
// (Markdown). A bad value is an error naming its variable.
//
// It imports nothing of the module but the leaf cks, so that every layer
// may take its types.
package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Getenv reads a variable: os.Getenv in a process, a map in a test. A nil
// Getenv is an empty environment.
type Getenv func(string) string

// orEmpty is getenv, or an empty environment for nil.
func orEmpty(getenv Getenv) Getenv {
	if getenv == nil {
		return func(string) string { return "" }
	}
	return getenv
}

// Setting is one row of the configuration table.
type Setting struct {
	// Env is the variable ("" for a flag only), Flag the flag's name
	// without dashes ("" for a variable only).
	Env, Flag string
	// Readers are the command words that read it: "serve", "dev", "mcp",
	// "agent KIND", or "client" for every command that calls a hub.
	Readers []string
	// FlagOn, when set, are the readers that take the flag (the others
	// read only the variable).
	FlagOn []string
	// Doc is its meaning, one line.
	Doc string
	// Secret: its value is never printed, only whether it is set.
	Secret bool
	// Redact: its value may hold a password (a database URL): Effective
	// gives it through the caller's redaction (backend.RedactURL).
	Redact bool
	// Test marks a hook of the process-level tests (a host clock made
	// wrong on purpose): no setting for people, so neither documented nor
	// printed by `cks config`.
	Test bool
	// Default is the default as text; when empty and Value is set, the
	// default is Value of an empty environment (so that it cannot drift).
	Default string
	// Value is the effective value from the parsed environment; nil: the
	// variable's text, or Default.
	Value func(v *Values) string
}

// Table is the configuration of cks, in the order of
// docs/configuration.md, the tests' hooks last.
func Table() []Setting {
	return slices.Concat(commonSettings(), hubSettings(), tracingSettings(), httpSettings(), ledgerSettings(), sweeperSettings(),
		pipelineSettings(), llmSettings(), agentSettings(), testClockSettings())
}

// Values are an environment as the parsers read it: every component's
// settings, for `cks config` and the table's defaults.
type Values struct {
	getenv   Getenv
	Common   Common
	Hub      Hub
	HTTP     HTTP
	Pipeline Pipeline
	LLM      LLM
	// Agents are each kind's settings (AgentKinds).
	Agents map[string]Agent
	// Errs are the parsers' refusals of bad values, each once.
	Errs []error
}

// Parse runs every parser of the configuration over getenv (nil: an
// empty environment), collecting their refusals.
func Parse(getenv Getenv) *Values {
	getenv = orEmpty(getenv)
	v := &Values{getenv: getenv, Common: ParseCommon(getenv), Agents: map[string]Agent{}}
	var err error
	if v.Hub, err = ParseHub(getenv); err != nil {
		v.Errs = append(v.Errs, err)
	}
	if v.HTTP, err = ParseHTTP(getenv); err != nil {
		v.Errs = append(v.Errs, err)
	}
	if v.Pipeline, err = ParsePipeline(getenv); err != nil {
		v.Errs = append(v.Errs, err)
	}
	for _, k := range AgentKinds() {
		s, err := ParseAgent(k, getenv)
		if err != nil {
			v.Errs = append(v.Errs, err)
			continue
		}
		v.Agents[k] = s
	}
	if v.LLM, err = ParseLLM(getenv); err != nil {
		v.Errs = append(v.Errs, err)
	}
	// A variable several parsers read (CKS_STALE_WINDOW: the hub's and
	// every agent's) is refused once.
	v.Errs = slices.CompactFunc(slices.SortedStableFunc(slices.Values(v.Errs), func(a, b error) int {
		return strings.Compare(a.Error(), b.Error())
	}), func(a, b error) bool { return a.Error() == b.Error() })
	return v
}

// defaults are the values of an empty environment.
var defaults = sync.OnceValue(func() *Values { return Parse(nil) })

// DefaultOf is s's default: Default, or its value in an empty environment.
func (s Setting) DefaultOf() string {
	if s.Default != "" || s.Value == nil {
		return s.Default
	}
	return s.Value(defaults())
}

// Effective is s's value in v: "set" or "unset" for a secret, the
// variable's text through redact for a value that may hold a password,
// else its parsed value, its variable's text, or its default.
func (s Setting) Effective(v *Values, redact func(string) string) string {
	raw := v.getenv(s.Env)
	switch {
	case s.Secret && raw != "":
		return "set"
	case s.Secret:
		return "unset"
	case s.Redact:
		return redact(raw)
	case s.Value != nil:
		return s.Value(v)
	case raw != "":
		return raw
	}
	return s.DefaultOf()
}

// Source is where s's value in v comes from: "env" when its variable is
// set, else "default".
func (s Setting) Source(v *Values) string {
	if s.Env != "" && v.getenv(s.Env) != "" {
		return "env"
	}
	return "default"
}

// Markdown is docs/configuration.md, from the table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Configuration\n\n" +
		"<!-- Generated from the configuration table (internal/config): go test ./cmd/cks -run TestConfigDoc -update -->\n\n" +
		"Every environment variable and configuration flag of the hub (`cks serve`, `cks dev`), the agents\n" +
		"(`cks agent KIND`) and the CLI. A flag wins over its variable. `cks config` prints the effective\n" +
		"values of this environment (`--json`; secrets only as set or unset) and exits 1 if a value is refused.\n" +
		"Durations are Go durations (`30s`, `5m`); the agents' intervals and the sweepers' also take seconds (`30`).\n" +
		"A reader `client` is every command that calls a hub.\n\n" +
		"| Variable | Flag | Default | Read by | Meaning |\n|---|---|---|---|---|\n")
	cell := func(x string) string {
		if x == "" {
			return ""
		}
		return "`" + x + "`"
	}
	for _, s := range Table() {
		if s.Test {
			continue
		}
		fl := ""
		if s.Flag != "" {
			fl = "`--" + s.Flag + "`"
		}
		def := s.DefaultOf()
		if def != "" && !strings.Contains(def, " ") {
			def = cell(def)
		}
		meaning := s.Doc
		if s.Secret {
			meaning += " (secret: never printed)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(s.Env), fl, def, strings.Join(s.Readers, ", "),
			strings.ReplaceAll(meaning, "|", "\\|"))
	}
	return b.String()
}

// hubReaders are the commands that run a hub.
func hubReaders() []string { return []string{"serve", "dev"} }

// agentWords are the readers "agent KIND" of kinds.
func agentWords(kinds ...string) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, "agent "+k)
	}
	return out
}

func dur(d time.Duration) string { return d.String() }

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cks-dev/cks/internal/agents"
)

// The commands of cks and their help. `cks --help` is generated: each
// command's line lists the flags its own flag set registers, read by
// running the command with -h on an environment that records the flag set
// (probeFlags) — a command registers its flags and parses them before it
// does anything else, so the help cannot omit a flag that exists or name
// one that does not.

// topCommand is a command of cks outside the groups of the operations
// table.
type topCommand struct {
	name string
	// args are the placeholders of its arguments in help, summary what it
	// does.
	args, summary string
	// subs, when set, are the words one of which must follow the name
	// (agent KIND, completion SHELL), each with its own flags.
	subs []subCommand
	// bare: it takes no flags (version, help).
	bare bool
	run  func(ctx context.Context, args []string, e env) error
}

// subCommand is one word after a command's name (agent critic).
type subCommand struct{ name, args, summary string }

// topCommands are the commands outside the groups, in the order of help.
// A function, not a variable: help runs them.
func topCommands() []topCommand {
	return []topCommand{
		{name: "serve", summary: "run a hub: the HTTP API, /mcp, the studio and /metrics",
			run: func(ctx context.Context, args []string, e env) error { return cmdServe(ctx, args, e, false) }},
		{name: "dev", args: "[-- COMMAND ARGS…]", summary: "a hub on the embedded SQLite default plus the four seed agents " +
			"(and, with --exec-types and a command after --, an exec agent) as child processes, their logs on stderr " +
			"prefixed with the kind; Ctrl-C stops the agents, then the hub",
			run: func(ctx context.Context, args []string, e env) error { return cmdServe(ctx, args, e, true) }},
		{name: "mcp", summary: "MCP over stdio for desktop LLM clients: a client of the hub (found as every client " +
			"command finds it) relaying its tools with the token's permissions; --embedded serves from the database " +
			"without a hub and runs no sweepers (docs/mcp.md)", run: cmdMCP},
		{name: "agent", subs: agentSubs(), run: cmdAgent},
		{name: "research", args: `"QUESTION"`, summary: "submit a question to the research pipeline; --wait follows it " +
			"(one line per transition) and prints the answer with its citations, or why it parked (exit 4)", run: cmdResearch},
		{name: "doctor", summary: "check the deployment: the database reachable and writable, its schema, the clock " +
			"skew against it, the hub, the token, the maintenance leader, the agents alive, and every stored task and object " +
			"against today's bounds; each failure with its fix; exit status of the first failure (below)", run: cmdDoctor},
		{name: "backup", args: "FILE", summary: "copy the SQLite database to FILE while the hub and its agents run " +
			"(progress on stderr; never over an existing file); Postgres: pg_dump", run: cmdBackup},
		{name: "restore", args: "FILE", summary: "replace the data directory's SQLite database with the backup FILE; " +
			"refused while a hub or an agent of the database runs; the replaced database is kept beside it", run: cmdRestore},
		{name: "config", summary: "print the effective configuration of this environment: every variable of the hub, the " +
			"agents and the CLI with its value and source (secrets as set/unset; docs/configuration.md); exit 1 if a value is refused",
			run: cmdConfig},
		{name: "completion", subs: completionShells, run: func(ctx context.Context, args []string, e env) error {
			return completionRun(ctx, args, e)
		}},
		{name: "api", args: "OP [JSON|-]", summary: "call any operation by name with JSON as its input (default {}, " +
			`"-" reads stdin) and print its output; --list lists the operations`, run: cmdAPI},
		{name: "version", bare: true, summary: "print the version", run: func(_ context.Context, _ []string, e env) error {
			fmt.Fprintln(e.stdout, "cks", version)
			return nil
		}},
		{name: "help", args: "[COMMAND]", bare: true, summary: "this help, or a command's (as COMMAND --help)",
			run: func(ctx context.Context, args []string, e env) error { return helpRun(ctx, args, e) }},
	}
}

// agentSubs are the agent kinds of `cks agent KIND`.
func agentSubs() []subCommand {
	summary := map[string]subCommand{
		"critic":          {summary: "one agent process working critique tasks (the contradiction sweeper enqueues them)"},
		"enrichment":      {summary: "one agent process working rederive and enrich tasks"},
		"fork_resolution": {summary: "one agent process working resolve_fork tasks (the fork detection sweeper enqueues them)"},
		"exec": {args: "-- COMMAND ARGS…", summary: "run COMMAND once per claimed task of --types (task JSON on stdin; " +
			"exit 0 completes, non-zero fails; killed on abort); a COMMAND that cannot be run is refused at start"},
		"pipeline": {summary: "the research pipeline (Researcher → Critic → Synthesizer → Arbiter) as its own process; " +
			"model from CKS_LLM_*"},
	}
	var out []subCommand
	for _, k := range agents.Kinds() {
		s := summary[k]
		s.name = k
		out = append(out, s)
	}
	return out
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return slices.Contains([]string{"-h", "-help", "--help", "help"}, arg)
}

// helpRun is cmdHelp, set by init: the help reads the groups, whose
// commands' help reads this table (a cycle of initialization otherwise).
var helpRun func(ctx context.Context, args []string, e env) error

func init() { helpRun = cmdHelp }

// cmdHelp is `cks help [COMMAND…]`: the whole help, or a command's.
func cmdHelp(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		printUsage(e.stdout)
		return nil
	}
	return runCommand(ctx, append(slices.Clone(args), "--help"), e)
}

// helpEntry is one command line of help.
type helpEntry struct {
	words, args, summary string
	bare                 bool
}

// helpSection is a heading with its commands; common are flags every one
// of them takes, said once in the heading.
type helpSection struct {
	heading string
	common  []string
	entries []helpEntry
}

// clientFlagNames are the flags of every command that calls a hub
// (clientFlags).
var clientFlagNames = []string{"url", "token", "data-dir", "json"}

// helpSections are the commands of cks, grouped for help.
func helpSections() []helpSection {
	var hub, calls, other []helpEntry
	for _, c := range topCommands() {
		var entries []helpEntry
		for _, s := range c.subs {
			entries = append(entries, helpEntry{words: c.name + " " + s.name, args: s.args, summary: s.summary})
		}
		if len(c.subs) == 0 {
			entries = []helpEntry{{words: c.name, args: c.args, summary: c.summary, bare: c.bare}}
		}
		switch c.name {
		case "serve", "dev", "mcp", "agent":
			hub = append(hub, entries...)
		case "research", "doctor", "api":
			calls = append(calls, entries...)
		default:
			other = append(other, entries...)
		}
	}
	var ops []helpEntry
	for _, g := range commandGroups() {
		for _, c := range g.commands {
			if c.sub != nil {
				continue // its commands are listed as a group of their own
			}
			ops = append(ops, helpEntry{words: g.name + " " + c.name, args: c.args, summary: c.summary})
		}
	}
	return []helpSection{
		{heading: "Run a hub and its agents:", entries: hub},
		{heading: "Call a hub (the operations of its table; `cks GROUP --help` lists a group's commands, " +
			"`cks GROUP COMMAND --help` a command's flags):", common: clientFlagNames, entries: append(ops, calls...)},
		{heading: "Other:", entries: other},
	}
}

// printUsage prints `cks --help`.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, s := range helpSections() {
		printSection(w, s)
	}
	fmt.Fprint(w, usageTail)
}

// printSection prints a section of help: each command with its arguments
// and flags, and what it does.
func printSection(w io.Writer, s helpSection) {
	heading := s.heading
	if len(s.common) > 0 {
		var fl []string
		for _, name := range s.common {
			fl = append(fl, "--"+name)
		}
		heading += " every one also takes " + strings.Join(fl[:len(fl)-1], ", ") + " and " + fl[len(fl)-1] + "."
	}
	fmt.Fprintf(w, "\n%s\n", wrap(heading, 96, ""))
	for _, en := range s.entries {
		words := []string{"cks", en.words}
		if en.args != "" && !strings.HasPrefix(en.args, "--") && !strings.HasPrefix(en.args, "[--") {
			words = append(words, strings.Fields(en.args)...)
		}
		if !en.bare {
			for _, f := range probeFlags(strings.Fields(en.words)) {
				if !slices.Contains(s.common, f.Name) {
					words = append(words, flagWords(f)...)
				}
			}
		}
		if strings.HasPrefix(en.args, "--") || strings.HasPrefix(en.args, "[--") {
			words = append(words, strings.Fields(en.args)...)
		}
		fmt.Fprintln(w, wrapWords(words, 96, "  ", "        "))
		if en.summary != "" {
			fmt.Fprintln(w, wrap(en.summary, 90, "      "))
		}
	}
}

// flagWords is how help shows flag f: [--name META], without brackets
// when it is required, without META when it is a boolean.
func flagWords(f *flag.Flag) []string {
	text := "--" + f.Name
	if meta := placeholder(f); meta != "" {
		text += " " + meta
	}
	if strings.HasSuffix(f.Usage, "(required)") {
		return strings.Fields(text)
	}
	return strings.Fields("[" + text + "]")
}

// placeholder is the value a flag takes in help: its input field's
// (TEXT, N, TYPE:TITLE), a name set in backquotes in its usage, or its
// type's; "" for a boolean.
func placeholder(f *flag.Flag) string {
	if v, ok := f.Value.(fieldValue); ok {
		return v.meta()
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "string":
		return "TEXT"
	case "int", "int64", "uint":
		return "N"
	case "float":
		return "X"
	case "duration":
		return "DURATION"
	case "value", "":
		return "VALUE"
	}
	return name
}

// wrapWords joins words into lines of at most width bytes (a longer word
// stands alone), the first after first, the rest after rest. A bracketed
// flag and its placeholder ("[--limit", "N]") stay on one line.
func wrapWords(words []string, width int, first, rest string) string {
	var units []string
	for i := 0; i < len(words); i++ {
		u := words[i]
		for strings.HasPrefix(u, "[") && !strings.HasSuffix(u, "]") && i+1 < len(words) {
			i++
			u += " " + words[i]
		}
		units = append(units, u)
	}
	var b strings.Builder
	line := first
	for i, u := range units {
		if i > 0 && len(line)+1+len(u) > width {
			b.WriteString(line + "\n")
			line = rest + u
			continue
		}
		if i > 0 {
			line += " "
		}
		line += u
	}
	b.WriteString(line)
	return b.String()
}

// probeFlags returns the flags of the command words name (`task create`,
// `agent exec`), in the order of their names: the flag set it registers
// when it runs with -h, recorded, its help discarded.
func probeFlags(words []string) []*flag.Flag {
	var sets []*flag.FlagSet
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" },
		probe: func(fs *flag.FlagSet) { sets = append(sets, fs) }}
	runCommand(context.Background(), append(slices.Clone(words), "-h"), e) //nolint:errcheck // flag.ErrHelp
	var out []*flag.Flag
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
	}
	return out
}

// describe is the arguments and summary help gives the command name
// (`serve`, `agent exec`), for its own --help.
func describe(name string) (args []string, summary string) {
	for _, c := range topCommands() {
		if c.name == name {
			return strings.Fields(c.args), c.summary
		}
		for _, s := range c.subs {
			if c.name+" "+s.name == name {
				return strings.Fields(s.args), s.summary
			}
		}
	}
	return nil, ""
}

// subsHelp is `cks agent --help`, `cks completion --help`: the section of help
// of c's subcommands.
func subsHelp(w io.Writer, c topCommand) {
	var entries []helpEntry
	for _, s := range c.subs {
		entries = append(entries, helpEntry{words: c.name + " " + s.name, args: s.args, summary: s.summary})
	}
	fmt.Fprintf(w, "Usage: cks %s %s [FLAGS]\n", c.name, strings.ToUpper(map[string]string{"agent": "kind", "completion": "shell"}[c.name]))
	printSection(w, helpSection{heading: "Commands:", entries: entries})
}

// globalFlags are the flags a command line may give before the command's
// name (`cks --url URL process list`), each with whether it takes a value:
// the flags of the hub's clients and of the commands that open the store.
var globalFlags = map[string]bool{"url": true, "token": true, "data-dir": true, "database": true, "json": false}

// hoistGlobals moves the global flags given before a command's words (its
// name, and the subcommand, kind or shell after it) to just after
// them, so that the command reads them as its own: `cks --url U process
// list` is `cks process list --url U`. A command that does not take one
// says so as for any flag it does not define. Any other flag before the
// words is a usage error.
// bareGroup reports whether the group named name runs a command of its
// own when none is named (group.bare).
func bareGroup(name string) bool {
	return slices.ContainsFunc(groups, func(g group) bool { return g.name == name && g.bare != "" })
}

func hoistGlobals(args []string) ([]string, error) {
	var words, globals []string
	depth := 1
	i := 0
	for ; i < len(args) && len(words) < depth; i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" || isHelp(a) {
			if a == "--" || isHelp(a) && len(words) > 0 {
				break
			}
			words = append(words, a)
			if len(words) == 1 && takesSub(a) {
				depth = 2
			}
			continue
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		value, ok := globalFlags[name]
		if !ok && len(words) == 1 && bareGroup(words[0]) {
			break // `cks usage --by model`: the group's bare command's flags
		}
		if !ok {
			return nil, fmt.Errorf("%w: flag %s before the command: only --url, --token, --data-dir, --database and --json "+
				"may come before it (the others go after it)", errUsage, a)
		}
		globals = append(globals, a)
		if value && !inline {
			if i+1 == len(args) {
				return nil, fmt.Errorf("%w: flag %s needs a value", errUsage, a)
			}
			i++
			globals = append(globals, args[i])
		}
	}
	if len(words) == 0 {
		if len(globals) > 0 {
			return nil, fmt.Errorf("%w: no command after %s", errUsage, strings.Join(globals, " "))
		}
		return args, nil
	}
	out := append(append(words, globals...), args[i:]...)
	return out, nil
}

// takesSub reports whether command name is followed by a word of its own
// (a group's subcommand, an agent's kind, a completion's shell).
func takesSub(name string) bool {
	if slices.ContainsFunc(groups, func(g group) bool { return g.name == name }) {
		return true
	}
	return slices.ContainsFunc(topCommands(), func(c topCommand) bool { return c.name == name && len(c.subs) > 0 })
}

const usageHead = `cks — control plane and shared blackboard for fleets of AI agents

Usage: cks COMMAND [ARGUMENTS] [FLAGS]
`

const usageTail = `
A flag of a command may come before or after its arguments; --url, --token,
--data-dir, --database and --json may also come before the command
(cks --url URL process list). A list flag is repeated or comma-separated; a
JSON flag is written as it is, or read from @FILE.

Environment: CKS_DATABASE_URL, CKS_DATA_DIR, CKS_LISTEN (hub side); CKS_URL,
CKS_TOKEN (client side); cks config lists every variable with its effective
value (docs/configuration.md). Flags win over the environment. Without --data-dir
or CKS_DATA_DIR the data directory is the nearest .cks in the working
directory or above it (as git finds .git), else ./.cks; the client reads the
hub's URL and admin token there.

Exit status: 0 success, 1 error (a refusal by the hub is printed in its words),
2 usage error (the command line itself: flags, arguments), 3 a stop or update whose
executor did not confirm its abort within the deadline (the task IS stopped or
restarted, but that executor may still be running against it), 4 a research
question followed with --wait that parked in needs_input; cks doctor's first failed
finding: 10 database, 11 schema, 12 clock skew, 13 hub, 14 token, 15 leader, 16 agents,
5 stored values past a bound.
`

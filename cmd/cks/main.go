// Command cks is the control plane and shared blackboard for fleets of AI agents.
// This file only wires flags and environment to the packages that do the work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/cks-dev/cks/agents"
	"github.com/cks-dev/cks/datadir"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `cks — control plane and shared blackboard for fleets of AI agents

Usage:
  cks serve   [--listen ADDR] [--database URL] [--data-dir DIR]   run a hub
  cks dev     [--listen ADDR] [--data-dir DIR] [--database URL] [--no-agents]
              [--exec-types T1,T2 -- COMMAND ARGS…]
                                  a hub on the embedded SQLite default plus the four seed
                                  agents (and an exec agent) as child processes; their
                                  logs on stderr prefixed with the kind; Ctrl-C stops
                                  the agents, then the hub
  cks mcp     [--url URL] [--token T] [--data-dir DIR]           MCP over stdio: a client of the hub,
                                  relaying its tools with the token's permissions
  cks mcp --embedded [--database URL] [--data-dir DIR]            MCP over stdio from the database,
                                  without a hub (no sweepers)
  cks agent KIND [--database URL] [--poll-interval D] [--liveness-interval D]
                 [--heartbeat-interval D] [--max-retries N] [--types T1,T2]
                                  one agent process; drains on SIGTERM or a stop request.
                                  critic works critique tasks, enrichment rederive and
                                  enrich, fork_resolution resolve_fork (the knowledge
                                  sweepers enqueue them)
  cks agent pipeline [--corpus DIR] [--workers N] [--poll D] [--max-rounds N] [agent flags]
                                  the research pipeline (Researcher → Critic → Synthesizer →
                                  Arbiter) as its own process; model from CKS_LLM_*
  cks agent exec --types T1,T2 [flags] -- COMMAND ARGS…
                                  run COMMAND once per claimed task (task JSON on stdin;
                                  exit 0 completes, non-zero fails; killed on abort)
  cks process list [--json]                                       list agent process instances
  cks process status KIND [--json]                                newest instance of one kind
  cks process stop KIND|ID [--json]                               ask a process to finish its task and exit
  cks task list [--state S] [--type T] [--cursor ID] [--limit N] [--order id] [--json]
                                  without --state: STOPPED tasks first, with how long
                                  they have been held and any unconfirmed abort
  cks task show ID [--json]       current attempt, earlier attempts, aborts, events
  cks task create --type T [--title …] [--priority N] [--payload JSON]
                  [--depends-on ID]… [--parent ID] [--dedupe-key K] [--json]
  cks task update ID [--title T] [--description D] [--criteria C] [--payload JSON]
                  [--priority N] [--metadata JSON] [--add-dep ID]… [--remove-dep ID]…
                  [--add-child TYPE:TITLE]… [--cancel-child ID]… [--deadline 30s]
                  [--wait=true] [--json]
                                  a material edit of a running task is stop → apply →
                                  start in one operation; prints the path taken
  cks task stop ID --reason R [--deadline 30s] [--wait=true] [--json]
                                  hold a task (ADR 0020); aborts a running executor
  cks task start ID [--reason R] [--json]
                                  release a STOPPED task (OPEN, or WAITING if blocked)
  cks task answer ID TEXT [--json]
  cks task cancel ID [--reason R] [--json]
  cks research "QUESTION" [--corpus DIR] [--wait] [--timeout 5m] [--json]
                                  submit a question to the research pipeline; --wait follows
                                  it (one line per transition) and prints the answer with
                                  its citations, or why it parked (exit 4)
  cks object show ID [--json]     an object's transition log as a chain, with its reasoning,
                                  claims and synthesis; a forked object's heads side by side
  cks object list [--status S] [--kind K] [--cursor ID] [--limit N] [--json]
  cks object edit ID [--base VERSION] (--content JSON | --set FIELD=VALUE…) [--json]
                                  write a version (two edits from one base make a fork)
  cks object versions ID [--json] the version DAG of an object
  cks sweeper list [--json] | status ID | start ID | stop ID         in-process sweepers (ADR-015)
  cks token create [--name N] [--grant PERM:RESOURCE]… [--task ID] [--json]
                                                                  new bearer token (shown once)
  cks token list [--json] | revoke ID                             principals and their grants
  cks session list [--json] | revoke ID [--json]                  studio sessions (never their secrets)
  cks doctor [--json]             check every stored task and object against today's bounds
                                  (values stored before a bound existed); exit 5 if any is past one
  cks api OP [JSON] | --list      call any operation by name with JSON as its input (default {},
                                  "-" reads stdin) and print its output; --list lists them
  cks bench ledger [--database postgres://…] [--tasks N] [--workers 1,4,16] [--json]
  cks bench abort|liveness|stop|pipeline [--database postgres://…] [--json]
                                  stop/update latency, liveness store, process stop,
                                  research pipeline (docs/benchmarks.md)
  cks version

process, task, object, sweeper, token and session call the operations of the hub's
table: ` + "`cks GROUP --help`" + ` lists a group's commands, ` + "`cks GROUP COMMAND --help`" + ` a
command's flags, one per field of the operation's input (a list is repeated or
comma-separated; a JSON value is written as it is, or read from @FILE).

Environment: CKS_DATABASE_URL, CKS_DATA_DIR, CKS_LISTEN (hub side);
CKS_URL, CKS_TOKEN (client side). Flags win over the environment; the client
falls back to the hub URL and admin token in the data directory (default ./.cks).

Exit status: 0 success, 1 error (a refusal by the hub is printed in its words),
2 usage error (the command line itself: flags, arguments), 3 a stop or update whose
executor did not confirm its abort within the deadline (the task IS stopped or
restarted, but that executor may still be running against it), 4 a research
question followed with --wait that parked in needs_input, 5 a doctor run that found
stored values past a bound.
`

// env carries the process environment and streams into the commands.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	// `cks agent exec` runs its commands under this binary started again
	// as their guard; such a process is the guard, not the CLI.
	agents.RunExecGuard()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// errUsage marks an error caused by how the command was called (exit status 2).
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	return exitCode(e, runCommand(ctx, args, e))
}

// groups are the commands of the operations table, each with subcommands.
var groups = []group{processGroup, taskGroup, objectGroup, sweeperGroup, tokenGroup, sessionGroup}

// runCommand runs the command args[0] with the rest of args.
func runCommand(ctx context.Context, args []string, e env) error {
	if i := slices.IndexFunc(groups, func(g group) bool { return g.name == args[0] }); i >= 0 {
		return groups[i].run(ctx, args[1:], e)
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], e, false)
	case "dev":
		return cmdServe(ctx, args[1:], e, true)
	case "mcp":
		return cmdMCP(ctx, args[1:], e)
	case "agent":
		return cmdAgent(ctx, args[1:], e)
	case "research":
		return cmdResearch(ctx, args[1:], e)
	case "doctor":
		return cmdDoctor(ctx, args[1:], e)
	case "api":
		return cmdAPI(ctx, args[1:], e)
	case "bench":
		return cmdBench(ctx, args[1:], e)
	case "version":
		fmt.Fprintln(e.stdout, "cks", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q; expected serve, dev, mcp, agent, process, task, research, object, sweeper, token, session, doctor, api, bench or version", errUsage, args[0])
}

// exitCode prints err, if any, and returns the exit status it means.
func exitCode(e env, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(e.stderr, "cks:", err)
		return 2
	case errors.Is(err, errAbortUnconfirmed):
		fmt.Fprintln(e.stderr, "cks: warning:", err)
		return 3
	case errors.Is(err, errParked):
		fmt.Fprintln(e.stderr, "cks:", err)
		return 4
	case errors.Is(err, errProblems):
		fmt.Fprintln(e.stderr, "cks:", err)
		return 5
	default:
		fmt.Fprintln(e.stderr, "cks:", err)
		return 1
	}
}

// flagSet returns a flag set whose errors are returned, not printed and exited.
func flagSet(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parse parses args, allowing flags after positional arguments (`status KIND
// --json`), and returns the positional ones. Everything after "--" is
// positional. A flag error is a usage error.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// noArgs parses flags and refuses positional arguments.
func noArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, fs.Name(), pos)
	}
	return nil
}

// or returns the first non-empty string.
func or(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// storeFlags are the flags of commands that open the store themselves.
type storeFlags struct {
	database, dataDir string
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.database, "database", "", "database URL: a file path, sqlite:PATH or postgres://… (env CKS_DATABASE_URL; default the data directory's cks.db)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory for the SQLite file, admin token and hub URL (env CKS_DATA_DIR; default "+datadir.Default+")")
}

func (f *storeFlags) resolve(e env) (datadir.Dir, string) {
	dir := datadir.Dir(or(f.dataDir, e.getenv("CKS_DATA_DIR"), datadir.Default))
	return dir, or(f.database, e.getenv("CKS_DATABASE_URL"), dir.DatabaseURL())
}

func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

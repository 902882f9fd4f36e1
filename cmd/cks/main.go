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
	"strings"
	"syscall"

	"github.com/cks-dev/cks/cmd/cks/internal/shutdown"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// env carries the process environment and streams into the commands.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// probe, when set, is given every flag set a command makes, once its
	// flags are registered (help reads them: probeFlags).
	probe func(*flag.FlagSet)
}

func main() {
	// `cks agent exec` runs its commands under this binary started again
	// as their guard; such a process is the guard, not the CLI.
	agents.RunExecGuard()
	// The signals have been caught since the shutdown package's init, well
	// before main: one that came meanwhile ends ctx at once.
	ctx, stop := shutdown.Context(context.Background())
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// common is the environment's locations: CKS_DATA_DIR, CKS_DATABASE_URL,
// CKS_LISTEN, CKS_URL and CKS_TOKEN (config.ParseCommon).
func (e env) common() config.Common { return config.ParseCommon(e.getenv) }

// errUsage marks an error caused by how the command was called (exit status 2).
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		printUsage(e.stderr)
		return 2
	}
	return exitCode(e, runCommand(ctx, args, e))
}

// groups are the commands of the operations table, each with subcommands.
var groups = []group{processGroup, taskGroup, typeGroup, limitGroup, usageGroup, objectGroup, sweeperGroup, scheduleGroup, tokenGroup, sessionGroup}

// runCommand runs the command args name, with global flags given before
// its name moved after it (hoistGlobals).
func runCommand(ctx context.Context, args []string, e env) error {
	args, err := hoistGlobals(args)
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(groups, func(g group) bool { return g.name == args[0] }); i >= 0 {
		return groups[i].run(ctx, args[1:], e)
	}
	var names []string
	for _, c := range topCommands() {
		if c.name == args[0] {
			if len(c.subs) > 0 && len(args) > 1 && isHelp(args[1]) {
				subsHelp(e.stdout, c)
				return nil
			}
			return c.run(ctx, args[1:], e)
		}
		names = append(names, c.name)
	}
	if isHelp(args[0]) {
		printUsage(e.stdout)
		return nil
	}
	for _, g := range groups {
		names = append(names, g.name)
	}
	return fmt.Errorf("%w: unknown command %q; expected %s or %s (cks --help lists them)", errUsage, args[0],
		strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
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
	case errors.As(err, new(*doctorError)):
		fmt.Fprintln(e.stderr, "cks:", err)
		var de *doctorError
		errors.As(err, &de)
		return de.code
	default:
		fmt.Fprintln(e.stderr, "cks:", err)
		return 1
	}
}

// flagSet returns a flag set whose errors are returned, not printed and
// exited; its help is the command's (commandHelp), unless the command
// sets its own. When e probes, it is handed the flag set, which holds the
// command's flags once the command has parsed them.
func flagSet(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	args, summary := describe(name)
	fs.Usage = func() { commandHelp(fs, name, args, summary) }
	if e.probe != nil {
		e.probe(fs)
	}
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
	fs.StringVar(&f.database, "database", "", "database `URL`: a file path, sqlite:PATH or postgres://… (env CKS_DATABASE_URL; default the data directory's cks.db)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory `DIR` for the SQLite file, admin token and hub URL (env CKS_DATA_DIR; default the nearest "+datadir.Default+" here or above, else ./"+datadir.Default+")")
}

func (f *storeFlags) resolve(e env) (datadir.Dir, string) {
	dir := dataDir(f.dataDir, e)
	return dir, or(f.database, e.common().DatabaseURL, dir.DatabaseURL())
}

// dataDir is the data directory of a command: the one named by --data-dir
// (given) or CKS_DATA_DIR, else the nearest .cks in the working directory
// or above it (datadir.Find), else ./.cks.
func dataDir(given string, e env) datadir.Dir {
	if d := or(given, e.common().DataDir); d != "" {
		return datadir.Dir(d)
	}
	return datadir.Find(".")
}

// catchSIGPIPE makes a write to a closed pipe (a stderr whose reader was
// stopped: `cks dev 2>&1 | tee`) an error (EPIPE) for this process instead
// of its death by SIGPIPE, in the commands that must shut down cleanly. It
// catches the signal rather than ignoring it: an ignored signal stays
// ignored across exec, and the agents and their commands must start with
// the default.
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

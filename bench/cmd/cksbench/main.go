// Command cksbench runs cks's load benchmarks (package bench) on a scratch
// store: a fresh SQLite file in a temporary directory, or a fresh schema in
// the Postgres database --database names, dropped at the end. Until issue
// 40 it was `cks bench`, in the shipped binary; it keeps that command's
// benchmarks, flags, progress lines on stderr and --json output, so that
// the figures of docs/benchmarks.md can be measured again.
//
//	cd bench && go run ./cmd/cksbench NAME [flags]   (NAME: ledger, abort, delayed, liveness, stop, pipeline, knowledge)
//
// Exit status: 0 when the benchmark ran (or help was asked for), 1 when it
// failed, 2 for a usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// env is where a benchmark writes: its result on stdout, its progress and
// errors on stderr.
type env struct {
	stdout, stderr io.Writer
}

// benchmark is one `cksbench NAME`.
type benchmark struct {
	name, summary string
	run           func(context.Context, []string, env) error
}

// errUsage marks an error caused by how the command was called (exit status 2).
var errUsage = errors.New("usage")

// run runs `cksbench args…` and returns its exit status.
func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	if name := args[0]; name == "-h" || name == "--help" || name == "help" {
		usage(e.stdout)
		return 0
	}
	i := slices.IndexFunc(benchmarks, func(b benchmark) bool { return b.name == args[0] })
	var err error
	if i < 0 {
		err = fmt.Errorf("%w: no benchmark %q: %s", errUsage, args[0], names())
	} else {
		err = benchmarks[i].run(ctx, args[1:], e)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(e.stderr, "cksbench:", err)
		return 2
	default:
		fmt.Fprintln(e.stderr, "cksbench:", err)
		return 1
	}
}

// names lists the benchmarks' names.
func names() string {
	var ns []string
	for _, b := range benchmarks {
		ns = append(ns, b.name)
	}
	return strings.Join(ns, ", ")
}

// usage prints the command's help: every benchmark with its summary.
func usage(w io.Writer) {
	fmt.Fprint(w, "Usage: cksbench NAME [flags]   (from bench/: go run ./cmd/cksbench NAME [flags])\n\n"+
		"Runs one of cks's load benchmarks on a scratch store: a temporary SQLite file, or with\n"+
		"--database postgres://… a fresh schema, dropped at the end. Progress goes to stderr,\n"+
		"the result to stdout (a table, or JSON with --json). `cksbench NAME --help` lists NAME's flags.\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, b := range benchmarks {
		fmt.Fprintf(tw, "  %s\t%s\n", b.name, b.summary)
	}
	tw.Flush()
}

// flagSet returns the flag set of the benchmark "bench NAME": its errors
// are returned, not printed and exited, and its help names the benchmark,
// its summary and its flags.
func flagSet(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	short := strings.TrimPrefix(name, "bench ")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: cksbench %s [flags]\n\n", short)
		for _, b := range benchmarks {
			if b.name == short {
				fmt.Fprintf(fs.Output(), "%s\n\n", b.summary)
			}
		}
		fmt.Fprintln(fs.Output(), "Flags:")
		fs.PrintDefaults()
	}
	return fs
}

// noArgs parses args, all of them flags; a flag error or an argument that
// is no flag is a usage error.
func noArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, fs.Name(), fs.Args())
	}
	return nil
}

// printJSON writes v as indented JSON, as cks's --json output is.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

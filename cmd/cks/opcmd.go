package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/ops"
)

// The commands of the operations table: `cks task stop ID --reason R` is
// stop_task, its flags and arguments its input (inputflags.go), its help the
// operation's spec. What a command adds is declared beside it (opSpec): how
// it prints the output for people (--json prints it as JSON), an exit status
// the output implies (an unconfirmed abort), an input field it fills in
// itself (--corpus made an absolute path).

// group is a command with subcommands: `cks task`, `cks object`, ….
type group struct {
	name     string
	commands []command
	// bare, when set, is the command `cks NAME` runs when no subcommand is
	// named (its flags may follow at once: `cks usage --by model`).
	bare string
}

// command is one subcommand of a group.
type command struct {
	name string
	// args are the placeholders of its positional arguments ("ID TEXT"),
	// summary what it does: its line in the group's help.
	args, summary string
	// op is the operation it calls, and in what its input reads from the
	// command line beyond the input's type (a hand-written command reads
	// its own).
	op ops.Operation
	in inputSpec
	// run runs it: full is "GROUP NAME", args follow the name.
	run func(ctx context.Context, full string, args []string, e env) error
	// sub, when set, is the group of commands it runs (`cks task bulk`:
	// op is nil).
	sub *group
}

// run runs the subcommand args[0] with the rest of args; --help (or -h,
// help) prints the group's help.
func (g group) run(ctx context.Context, args []string, e env) error {
	if g.bare != "" && (len(args) == 0 || (strings.HasPrefix(args[0], "-") && !isHelp(args[0]))) {
		args = append([]string{g.bare}, args...)
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: %s needs a subcommand: %s", errUsage, g.name, g.list())
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		g.help(e.stdout)
		return nil
	}
	for _, c := range g.commands {
		if c.name == args[0] {
			return c.run(ctx, g.name+" "+c.name, args[1:], e)
		}
	}
	return fmt.Errorf("%w: unknown %s subcommand %q; expected %s", errUsage, g.name, args[0], g.list())
}

// commandGroups are the groups and, after each, the groups its commands
// run (`task bulk`), each named by its words: every command of the CLI is
// a command of one of them.
func commandGroups() []group {
	var out []group
	var walk func(g group)
	walk = func(g group) {
		out = append(out, g)
		for _, c := range g.commands {
			if c.sub != nil {
				walk(*c.sub)
			}
		}
	}
	for _, g := range groups {
		walk(g)
	}
	return out
}

// list names the subcommands with their arguments: "list, show ID or stop ID".
func (g group) list() string {
	names := make([]string, len(g.commands))
	for i, c := range g.commands {
		names[i] = strings.TrimSpace(c.name + " " + c.args)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// help prints the group's subcommands, each with what it does.
func (g group) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: cks %s COMMAND [ARGUMENTS] [FLAGS]\n\nCommands:\n", g.name)
	width := 0
	for _, c := range g.commands {
		width = max(width, len(c.name)+1+len(c.args))
	}
	for _, c := range g.commands {
		summary := wrap(c.summary, 96-width, strings.Repeat(" ", width+4))
		fmt.Fprintf(w, "  %-*s  %s\n", width, strings.TrimSpace(c.name+" "+c.args), strings.TrimSpace(summary))
	}
	fmt.Fprintf(w, "\nEvery command takes --json (JSON instead of a table), --url, --token and --data-dir;\n"+
		"`cks %s COMMAND --help` lists its flags.\n", g.name)
}

// opSpec is what a command of operation Op[In, Out] adds to it.
type opSpec[In, Out any] struct {
	in inputSpec
	// summary, when set, replaces the operation's summary in help.
	summary string
	// prepare adjusts the input read from the command line before the call.
	prepare func(in *In) error
	// table prints the output for people (nil: as JSON).
	table func(x *reply[In, Out]) error
	// json, when set, is what --json prints instead of the output.
	json func(in *In, out Out) any
	// check is the error (the exit status) the output implies, after it
	// is printed.
	check func(in *In, out Out) error
	// offline: a read answered from the data directory's store when no
	// hub answers for it (readOffline).
	offline bool
}

// reply is a call's input and output, to print.
type reply[In, Out any] struct {
	ctx context.Context
	c   *client.Client
	w   io.Writer
	in  *In
	out Out
}

// opCommand is the command name of op.
func opCommand[In, Out any](name string, op *ops.Op[In, Out], s opSpec[In, Out]) command {
	probe := bindInput(flag.NewFlagSet(name, flag.ContinueOnError), op, s.in)
	return command{name: name, args: strings.Join(probe.metas(), " "), summary: or(s.summary, op.Spec().Summary), op: op, in: s.in,
		run: func(ctx context.Context, full string, args []string, e env) error {
			return s.run(ctx, op, full, args, e)
		}}
}

// readInput reads the input of op, a command full with input spec spec,
// from args (its flags and arguments, and the client's flags, which it
// returns with the input's flags, which name the flag a refusal blames);
// --help prints the command's help.
func readInput(op ops.Operation, spec inputSpec, full string, args []string, e env) (any, clientFlags, *inputFlags, error) {
	fs := flagSet(full, e)
	var cf clientFlags
	cf.register(fs)
	b := bindInput(fs, op, spec)
	fs.Usage = func() { commandHelp(fs, full, b.metas(), op.Spec().Description) }
	pos, err := parse(fs, args)
	if err != nil {
		return nil, cf, b, err
	}
	v, err := b.input(pos)
	return v, cf, b, err
}

// run reads op's input from args, calls op on the hub and prints its output.
func (s opSpec[In, Out]) run(ctx context.Context, op *ops.Op[In, Out], full string, args []string, e env) error {
	v, cf, b, err := readInput(op, s.in, full, args, e)
	if err != nil {
		return err
	}
	in := v.(*In)
	if s.prepare != nil {
		if err := s.prepare(in); err != nil {
			return err
		}
	}
	var out Out
	c, err := cf.client(e)
	if err == nil {
		err = c.Call(ctx, op, in, &out)
	}
	if s.offline && err != nil {
		if read, rerr := readOffline(ctx, op, &cf, e, err, in, &out); read {
			err = rerr
		}
	}
	if err != nil {
		return b.nameFlag(err)
	}
	x := &reply[In, Out]{ctx: ctx, c: c, w: e.stdout, in: in, out: out}
	switch {
	case cf.json && s.json != nil:
		err = printJSON(x.w, s.json(in, out))
	case cf.json || s.table == nil:
		err = printJSON(x.w, out)
	default:
		err = s.table(x)
	}
	if err == nil && s.check != nil {
		err = s.check(in, out)
	}
	return err
}

// commandHelp prints a command's usage line, what it does, and its flags
// with their placeholders.
func commandHelp(fs *flag.FlagSet, full string, args []string, description string) {
	w := fs.Output()
	line := strings.TrimSpace(full + " " + strings.Join(args, " ") + " [FLAGS]")
	if len(args) > 0 && strings.HasPrefix(strings.TrimPrefix(args[0], "["), "--") { // agent exec -- COMMAND ARGS…
		line = full + " [FLAGS] " + strings.Join(args, " ")
	}
	fmt.Fprintf(w, "Usage: cks %s\n\n", line)
	if description != "" {
		fmt.Fprintf(w, "%s\n\n", wrap(description, 78, ""))
	}
	fmt.Fprintln(w, "Flags:")
	fs.VisitAll(func(f *flag.Flag) {
		meta, usage := flag.UnquoteUsage(f)
		if v, ok := f.Value.(fieldValue); ok {
			meta = v.meta()
		}
		fmt.Fprintf(w, "  --%s\n", strings.TrimSpace(f.Name+" "+meta))
		fmt.Fprintln(w, wrap(usage, 74, "      "))
	})
}

// wrap breaks text into lines of at most width bytes (a longer word stands
// alone), each after indent.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for _, word := range strings.Fields(text) {
		switch {
		case line == 0:
			b.WriteString(indent)
		case line+1+len(word) > width:
			b.WriteString("\n" + indent)
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

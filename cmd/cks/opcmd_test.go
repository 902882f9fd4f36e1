package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// maxFuncLines bounds the length of a function of the command.
const maxFuncLines = 80

// TestFunctionsAreShort: no function or method of cmd/cks (its non-test
// files, whatever their build tags) spans more than maxFuncLines lines, from
// its func keyword to its closing brace.
func TestFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines long, more than %d", start, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// topLevel are the operations a command of its own calls, outside the
// groups: a flow of the CLI's (research --wait, doctor's pages).
var topLevel = map[string]ops.Operation{"research": ops.SubmitResearch, "doctor": ops.CheckStored}

// TestCommandsAreTheTable: the operations offered on the CLI surface are
// exactly those a command calls, each by one command.
func TestCommandsAreTheTable(t *testing.T) {
	called := map[string]string{}
	add := func(cmd string, op ops.Operation) {
		if prev, ok := called[op.Spec().Name]; ok {
			t.Errorf("%s is called by both %q and %q", op.Spec().Name, prev, cmd)
		}
		called[op.Spec().Name] = cmd
	}
	for _, g := range commandGroups() {
		for _, c := range g.commands {
			if c.sub == nil {
				add(g.name+" "+c.name, c.op)
			}
		}
	}
	for cmd, op := range topLevel {
		add(cmd, op)
	}
	for _, op := range ops.All() {
		cmd, ok := called[op.Spec().Name]
		switch cli := op.Spec().Surfaces&ops.CLI != 0; {
		case cli && !ok:
			t.Errorf("%s is offered on the CLI, but no command calls it", op.Spec().Name)
		case !cli && ok:
			t.Errorf("`cks %s` calls %s, which is not offered on the CLI", cmd, op.Spec().Name)
		}
	}
}

// TestGroupHelp: `cks GROUP --help` (and -h, help) lists every subcommand
// with its arguments and what it does, exit 0; `cks GROUP COMMAND --help`
// prints the command's usage, the operation's description and every flag
// of its input, exit 0. No hub is needed.
func TestGroupHelp(t *testing.T) {
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
			getenv: func(string) string { return "" }})
		return code, stdout.String(), stderr.String()
	}
	for _, g := range commandGroups() {
		for _, h := range []string{"--help", "-h", "help"} {
			code, out, errOut := cli(append(strings.Fields(g.name), h)...)
			if code != 0 || errOut != "" {
				t.Errorf("cks %s %s: exit %d %q", g.name, h, code, errOut)
			}
			for _, c := range g.commands {
				if line := strings.TrimSpace(c.name + " " + c.args); !strings.Contains(out, "  "+line+" ") {
					t.Errorf("cks %s %s does not list %q:\n%s", g.name, h, line, out)
				}
			}
		}
		for _, c := range g.commands {
			if c.sub != nil {
				continue // a group of its own, above
			}
			code, _, errOut := cli(append(strings.Fields(g.name), c.name, "--help")...)
			if code != 0 || !strings.Contains(errOut, "Usage: cks "+g.name+" "+c.name) {
				t.Errorf("cks %s %s --help: exit %d\n%s", g.name, c.name, code, errOut)
			}
			b := bindInput(flag.NewFlagSet("", flag.ContinueOnError), c.op, c.in)
			for name := range b.flags {
				if !strings.Contains(errOut, "  --"+name) {
					t.Errorf("cks %s %s --help lacks --%s:\n%s", g.name, c.name, name, errOut)
				}
			}
		}
	}
}

// TestFlagsReachTheirFields: every flag and argument of every command of
// the table fills the field of its operation's input it is named for. Each
// command runs against a hub stand-in that records the request, with a
// value for every flag; the request, read as the hub reads it
// (ops.HTTPInput), has every field set. A command whose flag named no
// field, or set another, fails.
func TestFlagsReachTheirFields(t *testing.T) {
	for _, g := range commandGroups() {
		for _, c := range g.commands {
			if c.sub != nil {
				continue
			}
			t.Run(strings.ReplaceAll(g.name, " ", "_")+"_"+c.name, func(t *testing.T) {
				b := bindInput(flag.NewFlagSet("", flag.ContinueOnError), c.op, c.in)
				args := append(strings.Fields(g.name), c.name)
				for _, p := range b.args {
					args = append(args, map[reflect.Kind]string{reflect.String: "s", reflect.Int64: "5"}[p.typ.Kind()])
				}
				for name, p := range b.flags {
					args = append(args, "--"+name+"="+sampleFlag(t, p))
				}
				in := recordCall(t, c.op, args)
				params := slices.Clone(b.args)
				for _, p := range b.flags {
					params = append(params, p)
				}
				for _, p := range params {
					if cks.InputField(in, p.field).IsZero() {
						t.Errorf("cks %q: field %s of %s is not set", args, p.field, c.op.Spec().Name)
					}
				}
			})
		}
	}
}

// sampleFlag is a value for flag p that sets its field to something not
// zero, by the flag's placeholder.
func sampleFlag(t *testing.T, p param) string {
	samples := map[string]string{"TEXT": "x", "N": "7", "X": "1.5", "": "true", "DURATION": "2s", "A,B": "a,b", "ID,ID": "3,4",
		"TYPE:TITLE": "t:a title", "PERMISSION:RESOURCE": "read:/", "TIME": "2026-12-24T18:00:00Z"}
	if v, ok := p.value.(*jsonValue); ok && v.typ == reflect.TypeFor[json.RawMessage]() {
		return `{"k":1}`
	}
	if v, ok := p.value.(*jsonValue); ok && v.typ == reflect.TypeFor[cks.ScheduleTask]() {
		return `{"type":"t"}`
	}
	sample, ok := samples[p.value.meta()]
	if !ok {
		t.Fatalf("no sample for the flag of %s (%T, %s)", p.field, p.value, p.value.meta())
	}
	return sample
}

// recordCall runs `cks ARGS --json` against a stand-in of the hub that
// answers {} and returns the input of op the request carried.
func recordCall(t *testing.T, op ops.Operation, args []string) any {
	t.Helper()
	var mu sync.Mutex
	var in any
	mux := http.NewServeMux()
	mux.HandleFunc(op.Spec().Method+" "+op.Spec().Path, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got, err := ops.HTTPInput(op, r.PathValue, r.URL.Query(), body)
		if err != nil {
			t.Errorf("%s %s: %v", r.Method, r.URL, err)
		}
		mu.Lock()
		in = got
		mu.Unlock()
		fmt.Fprint(w, "{}")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(args, "--json", "--url", srv.URL, "--token", "t"),
		env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }})
	mu.Lock()
	defer mu.Unlock()
	if code != 0 || in == nil {
		t.Fatalf("cks %q: exit %d, request %v\n%s", args, code, in, stderr.String())
	}
	return in
}

package main

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks/internal/base/datadir"
)

// cliRun runs the CLI in this process with an empty environment and no
// stdin, and returns its exit status and output.
func cliRun(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
		getenv: func(string) string { return "" }})
	return code, stdout.String(), stderr.String()
}

// nouns are the first words of every command line cks takes, with the
// words that may follow them (a group's subcommands, an agent's kinds, a
// completion's shells).
func nouns() map[string][]string {
	out := map[string][]string{}
	for _, g := range commandGroups() {
		for _, c := range g.commands {
			out[g.name] = append(out[g.name], c.name)
		}
	}
	for _, c := range topCommands() {
		out[c.name] = nil
		for _, s := range c.subs {
			out[c.name] = append(out[c.name], s.name)
		}
	}
	return out
}

// TestNounHelp: `cks NOUN --help` (and -h, and `cks help NOUN`) exits 0
// with help for every noun — agent and completion as well as the groups, each
// naming every word that may follow it — and so does `cks NOUN WORD
// --help` for every word, with the command's usage line. No hub is needed.
func TestNounHelp(t *testing.T) {
	for noun, words := range nouns() {
		n := strings.Fields(noun) // task bulk: a group's group
		variants := [][]string{append(slices.Clone(n), "--help"), append(slices.Clone(n), "-h")}
		if len(n) == 1 {
			variants = append(variants, []string{"help", noun})
		}
		for _, args := range variants {
			code, out, errOut := cliRun(t, args...)
			if code != 0 || out+errOut == "" {
				t.Errorf("cks %q: exit %d, %d bytes of help\n%s", args, code, len(out+errOut), errOut)
			}
			for _, w := range words {
				if !strings.Contains(out, noun+" "+w) && !strings.Contains(out, "  "+w) {
					t.Errorf("cks %q does not name %s %s:\n%s", args, noun, w, out)
				}
			}
		}
		for _, w := range words {
			code, out, errOut := cliRun(t, append(slices.Clone(n), w, "--help")...)
			if code != 0 || !strings.Contains(out+errOut, "Usage: cks "+noun+" "+w) {
				t.Errorf("cks %s %s --help: exit %d\n%s%s", noun, w, code, out, errOut)
			}
		}
	}
	if code, _, errOut := cliRun(t, "agent"); code != 2 || !strings.Contains(errOut, "agent needs a kind") {
		t.Errorf("cks agent: exit %d %q, want the usage error naming the kinds", code, errOut)
	}
}

// TestNoBenchCommand (issue 40): the load benchmarks are not in the shipped
// binary — `cks bench` is an unknown command; they are cksbench of the
// benchmark module (bench/cmd/cksbench, docs/benchmarks.md).
func TestNoBenchCommand(t *testing.T) {
	if code, _, errOut := cliRun(t, "bench", "ledger", "--tasks", "1"); code != 2 || !strings.Contains(errOut, `unknown command "bench"`) {
		t.Errorf("cks bench ledger: exit %d, %q; want 2, unknown command", code, errOut)
	}
}

// usageBlocks splits `cks --help` into the block of each command line (its
// usage and summary lines), by its words ("task create", "agent exec").
func usageBlocks(t *testing.T, help string) map[string]string {
	t.Helper()
	blocks := map[string]string{}
	cur := ""
	for _, line := range strings.Split(help, "\n") {
		if rest, ok := strings.CutPrefix(line, "  cks "); ok {
			f := strings.Fields(rest)
			cur = f[0]
			for i := 1; i < len(f) && slices.Contains(nouns()[cur], f[i]); i++ {
				cur += " " + f[i] // a group's command, or a group's group's (task bulk stop)
			}
			blocks[cur] = ""
		}
		if !strings.HasPrefix(line, "  ") {
			cur = ""
		}
		if cur != "" {
			blocks[cur] += line + "\n"
		}
	}
	return blocks
}

// TestUsageListsEveryFlag: `cks --help` (stdout, exit 0; `cks` alone
// prints it on stderr and exits 2) has a line for every command, and each
// command's block names every flag the command takes — the flags of its
// operation's input for a command of the table (the three the issue found
// missing among them), the flags each hand-written command defines — but
// the client flags every command calling a hub takes, which the heading
// names once.
func TestUsageListsEveryFlag(t *testing.T) {
	code, help, _ := cliRun(t, "--help")
	if code != 0 {
		t.Fatalf("cks --help: exit %d", code)
	}
	if code, _, errOut := cliRun(t); code != 2 || errOut != help {
		t.Errorf("cks alone: exit %d and other help than --help's", code)
	}
	blocks := usageBlocks(t, help)
	want := map[string][]string{
		"serve": {"--listen", "--database", "--data-dir"}, "dev": {"--no-agents", "--exec-types", "--listen", "-- COMMAND"},
		"mcp": {"--database"}, "agent exec": {"--types", "--poll-interval", "-- COMMAND"}, "agent pipeline": {"--corpus", "--workers", "--max-rounds"},
		"research": {"--wait", "--timeout", "--corpus"}, "api": {"--list"},
		"task create": {"--criteria", "--description", "--max-attempts", "--type TEXT", "--payload JSON|@FILE"},
		"task stop":   {"--reason TEXT", "--deadline DURATION"}, "object edit": {"--set FIELD=VALUE", "[--base N]"},
		"version": nil, "help": nil,
	}
	for _, g := range commandGroups() {
		for _, c := range g.commands {
			if c.sub != nil {
				continue
			}
			name := g.name + " " + c.name
			for fl := range bindInput(flag.NewFlagSet("", flag.ContinueOnError), c.op, c.in).flags {
				want[name] = append(want[name], "--"+fl)
			}
			if _, ok := want[name]; !ok {
				want[name] = nil
			}
		}
	}
	for name, flags := range want {
		block, ok := blocks[name]
		if !ok {
			t.Errorf("cks --help has no line for %s:\n%s", name, help)
			continue
		}
		for _, fl := range flags {
			if !strings.Contains(block, fl) {
				t.Errorf("cks --help: %s lacks %s:\n%s", name, fl, block)
			}
		}
	}
	// Every flag a command's flag set holds is on its line, but the client
	// flags of the commands that call a hub, each of which takes them all.
	if !strings.Contains(help, "every one also takes --url, --token, --data-dir and --json") {
		t.Errorf("cks --help does not name the client flags once")
	}
	calls := help[strings.Index(help, "\nCall a hub"):strings.Index(help, "\nOther:")]
	for name, block := range blocks {
		flags := probeFlags(strings.Fields(name))
		for _, f := range flags {
			common := slices.Contains(clientFlagNames, f.Name) && strings.Contains(calls, block)
			if !common && !strings.Contains(block, "--"+f.Name) {
				t.Errorf("cks --help: %s lacks --%s:\n%s", name, f.Name, block)
			}
		}
		if strings.Contains(calls, block) {
			for _, c := range clientFlagNames {
				if !slices.ContainsFunc(flags, func(f *flag.Flag) bool { return f.Name == c }) {
					t.Errorf("cks %s takes no --%s, which help says every command calling a hub takes", name, c)
				}
			}
		}
	}
}

// TestGlobalFlagsAnywhere: the client and store flags may come before the
// command's name, between it and its subcommand, or after it, and mean the
// same; any other flag before the command is a usage error naming it.
func TestGlobalFlagsAnywhere(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{"processes":[]}`))
	}))
	defer srv.Close()
	dir := datadir.Dir(t.TempDir())
	if err := dir.WriteURL(srv.URL); err != nil {
		t.Fatal(err)
	}
	if err := dir.WriteToken("cks_from_dir"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args      []string
		token     string
		wantStdio string
	}{
		{[]string{"--url", srv.URL, "--token", "t1", "process", "list"}, "t1", "no agent processes"},
		{[]string{"process", "list", "--url", srv.URL, "--token", "t2"}, "t2", "no agent processes"},
		{[]string{"process", "--url", srv.URL, "list", "--token", "t3"}, "t3", "no agent processes"},
		{[]string{"--url=" + srv.URL, "--token=t4", "--json", "process", "list"}, "t4", `"processes": []`},
		{[]string{"--data-dir", string(dir), "process", "list"}, "cks_from_dir", "no agent processes"},
		{[]string{"--json", "--data-dir=" + string(dir), "process", "--token", "t5", "list"}, "t5", `"processes": []`},
	} {
		mu.Lock()
		auth = nil
		mu.Unlock()
		code, out, errOut := cliRun(t, c.args...)
		mu.Lock()
		got := slices.Clone(auth)
		mu.Unlock()
		if code != 0 || !strings.Contains(out, c.wantStdio) || len(got) != 1 || got[0] != "GET /v1/processes Bearer "+c.token {
			t.Errorf("cks %q: exit %d, requests %q\n%s%s", c.args, code, got, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0", "serve"}, "flag --listen before the command"},
		{[]string{"--url"}, "flag --url needs a value"},
		{[]string{"--json"}, "no command after --json"},
		{[]string{"--database", "x.db", "process", "list"}, "flag provided but not defined: -database"},
	} {
		if code, _, errOut := cliRun(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("cks %q: exit %d %q, want 2 saying %q", c.args, code, errOut, c.want)
		}
	}
}

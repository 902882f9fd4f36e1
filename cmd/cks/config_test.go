package main

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md from the configuration table")

// notSettings are CKS_ names in the source that configure nothing: what an
// exec agent hands its command, the exec guard's marker, the tests'
// database and pooler, the tests' skewed host clocks (backend.EnvOptions),
// the early-signal test's marker (package shutdown).
var notSettings = []string{"CKS_TASK_ID", "CKS_TASK_TYPE", "CKS_TASK_ATTEMPT", "CKS_TASK_RESTART", "CKS_TASK_REVISION",
	"CKS_EXEC_GUARD", "CKS_TEST_DATABASE_URL", "CKS_TEST_POOLER_URL", "CKS_TEST_CLOCK_SKEW", "CKS_TEST_CLOCK_CORRECTION",
	"CKS_TEST_SIGNALS_READY"}

// sourceNames are the CKS_ names written in the module's non-test Go
// source (prefixes such as CKS_CRITIC_ left out), but for config.go's own.
func sourceNames(t testing.TB) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(CKS_[A-Z0-9_]*[A-Z0-9])[="]`)
	names := map[string]bool{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == "config.go" ||
			filepath.Base(path) == "config.go" && filepath.Base(filepath.Dir(path)) == "cks" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestConfigTableMatchesParsers: the table names every variable the
// parsers read (run with a recording environment that takes every branch)
// and every CKS_ name in the source, and names none that nothing reads.
func TestConfigTableMatchesParsers(t *testing.T) {
	read := map[string]bool{}
	values := map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "m"} // reach every LLM variable
	parseConfig(func(k string) string { read[k] = true; return values[k] })
	inTable := map[string]bool{}
	for _, s := range configTable() {
		if s.env != "" {
			if inTable[s.env] {
				t.Errorf("%s is in the table twice", s.env)
			}
			inTable[s.env] = true
		}
		if s.env == "" && s.flag == "" || s.meaning == "" || len(s.readers) == 0 {
			t.Errorf("entry %+v lacks a name, a meaning or its readers", s)
		}
	}
	src := sourceNames(t)
	for name := range read {
		if !inTable[name] {
			t.Errorf("a parser reads %s, which the configuration table lacks", name)
		}
	}
	for name := range src {
		if !inTable[name] && !slices.Contains(notSettings, name) {
			t.Errorf("the source names %s, which the configuration table lacks (or add it to notSettings)", name)
		}
	}
	for name := range inTable {
		if !read[name] && !src[name] {
			t.Errorf("the table has %s, which no parser reads and the source never names", name)
		}
	}
	if len(read) < 40 {
		t.Errorf("the parsers read only %d variables: the recording environment missed them", len(read))
	}
}

// readerWords are the command words whose flags a reader of the table
// stands for ("client": every command calling a hub, as process status, which has no flags of its own).
func readerWords(r string) []string {
	if r == "client" {
		return []string{"process", "status"}
	}
	return strings.Fields(r)
}

// TestConfigTableMatchesFlags: every configuration flag of serve, dev, mcp,
// the agents, the clients, backup, restore and config is in the table for
// that command, every flag the table gives a command exists there, and a
// flag's default in the table is the one its flag set applies.
func TestConfigTableMatchesFlags(t *testing.T) {
	readers := []string{"serve", "dev", "mcp", "client", "backup", "restore", "config"}
	readers = append(readers, agentWords(agentKinds()...)...)
	table := configTable()
	for _, r := range readers {
		flags := probeFlags(readerWords(r))
		if len(flags) == 0 {
			t.Fatalf("%s has no flags: probe failed", r)
		}
		byName := map[string]string{}
		for _, f := range flags {
			byName[f.Name] = f.DefValue
		}
		want := map[string]bool{}
		for _, s := range table {
			if s.flag == "" || !slices.Contains(s.readers, r) || s.flagOn != nil && !slices.Contains(s.flagOn, r) {
				continue
			}
			want[s.flag] = true
			def, ok := byName[s.flag]
			if !ok {
				t.Errorf("the table gives %s --%s, which it does not have", r, s.flag)
				continue
			}
			if def != "" && def != s.defaultOf() {
				t.Errorf("%s --%s defaults to %q, the table says %q", r, s.flag, def, s.defaultOf())
			}
		}
		for name := range byName {
			if !want[name] && name != "json" {
				t.Errorf("%s has --%s, which the configuration table lacks for it", r, name)
			}
		}
	}
}

func agentKinds() []string {
	var out []string
	for _, s := range agentSubs() {
		out = append(out, s.name)
	}
	return out
}

// TestConfigNamesABadValueOnce (issue 39.13): a variable the hub and
// every agent read, refused, is named once in the error (main named
// CKS_STALE_WINDOW six times).
func TestConfigNamesABadValueOnce(t *testing.T) {
	res := runCKSIn(t, t.TempDir(), []string{"CKS_STALE_WINDOW=bogus"}, "config")
	if res.code != 1 || strings.Count(res.stderr, "CKS_STALE_WINDOW") != 1 {
		t.Fatalf("exit %d, stderr %s; want 1, naming CKS_STALE_WINDOW once", res.code, res.stderr)
	}
}

// TestConfigDoc: docs/configuration.md is the table's (-update rewrites it).
func TestConfigDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	want := configMarkdown()
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not the configuration table's: go test ./cmd/cks -run TestConfigDoc -update", path)
	}
}

// TestConfigCommand: `cks config` prints the values the environment sets
// through the parsers, with their source; a secret only as set, a
// database password never; a refused value exits 1 naming its variable.
func TestConfigCommand(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		env     []string
		code    int
		want    map[string][2]string // env → value, source
		absent  []string
		stderrs string
	}{
		{name: "defaults", want: map[string][2]string{
			"CKS_STALE_WINDOW": {"5m0s", "default"}, "CKS_LISTEN": {"127.0.0.1:7433", "default"},
			"CKS_TOKEN": {"unset", "default"}, "CKS_CRITIC_TYPES": {"critique", "default"},
			"CKS_FORK_AGENT_POLL_INTERVAL": {"30s", "default"}, "CKS_DATA_DIR": {dir, "default"}}},
		{name: "set", env: []string{"CKS_STALE_WINDOW=90s", "CKS_TOKEN=s3cret-token", "CKS_LLM_API_KEY=k3y-value",
			"CKS_DATABASE_URL=postgres://cks:pa55word@db:5432/cks", "CKS_CRITIC_POLL_INTERVAL=2", "CKS_HTTP_MAX_CONNS_PER_IP=0"},
			want: map[string][2]string{"CKS_STALE_WINDOW": {"1m30s", "env"}, "CKS_TOKEN": {"set", "env"},
				"CKS_LLM_API_KEY": {"set", "env"}, "CKS_DATABASE_URL": {"postgres://cks:xxxxx@db:5432/cks", "env"},
				"CKS_CRITIC_POLL_INTERVAL": {"2s", "env"}, "CKS_CRITIC_HEARTBEAT_INTERVAL": {"30s", "default"},
				"CKS_HTTP_MAX_CONNS_PER_IP": {"0", "env"}},
			absent: []string{"s3cret-token", "k3y-value", "pa55word"}},
		{name: "refused", env: []string{"CKS_LEADER_TTL=soon"}, code: 1, stderrs: "CKS_LEADER_TTL"},
		// Issue 38.9: a password in the query, in a URL that does not
		// parse, in a keyword/value string.
		{name: "password in the query", env: []string{"CKS_DATABASE_URL=postgres://cks@db/cks?sslmode=require&password=pa55word"},
			want:   map[string][2]string{"CKS_DATABASE_URL": {"postgres://cks@db/cks?sslmode=require&password=xxxxx", "env"}},
			absent: []string{"pa55word"}},
		{name: "password in a URL that does not parse", env: []string{"CKS_DATABASE_URL=postgres://cks:pa55word@db:bad port/cks"},
			want:   map[string][2]string{"CKS_DATABASE_URL": {"postgres://cks:xxxxx@db:bad port/cks", "env"}},
			absent: []string{"pa55word"}},
		{name: "password in a connection string", env: []string{"CKS_DATABASE_URL=host=db user=cks password='pa55 word' dbname=cks"},
			want:   map[string][2]string{"CKS_DATABASE_URL": {"host=db user=cks password=xxxxx dbname=cks", "env"}},
			absent: []string{"pa55"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runCKSIn(t, dir, c.env, "config", "--json")
			if res.code != c.code || !strings.Contains(res.stderr, c.stderrs) {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, c.code, res.stdout, res.stderr)
			}
			var r configReport
			if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
				t.Fatalf("%v\n%s", err, res.stdout)
			}
			got := map[string][2]string{}
			for _, s := range r.Settings {
				got[s.Env] = [2]string{s.Value, s.Source}
			}
			for k, w := range c.want {
				if k == "CKS_DATA_DIR" {
					w[0] = ".cks" // relative to the working directory
				}
				if got[k] != w {
					t.Errorf("%s = %v, want %v", k, got[k], w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(res.stdout, a) {
					t.Errorf("the output shows the secret %q", a)
				}
			}
			table := runCKSIn(t, dir, c.env, "config")
			for _, a := range c.absent {
				if strings.Contains(table.stdout, a) {
					t.Errorf("the table shows the secret %q", a)
				}
			}
		})
	}
}

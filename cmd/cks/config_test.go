package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/config"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md from the configuration table")

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
	table := config.Table()
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
			if s.Flag == "" || !slices.Contains(s.Readers, r) || s.FlagOn != nil && !slices.Contains(s.FlagOn, r) {
				continue
			}
			want[s.Flag] = true
			def, ok := byName[s.Flag]
			if !ok {
				t.Errorf("the table gives %s --%s, which it does not have", r, s.Flag)
				continue
			}
			if def != "" && def != s.DefaultOf() {
				t.Errorf("%s --%s defaults to %q, the table says %q", r, s.Flag, def, s.DefaultOf())
			}
		}
		for name := range byName {
			if !want[name] && name != "json" {
				t.Errorf("%s has --%s, which the configuration table lacks for it", r, name)
			}
		}
	}
}

// agentWords are the readers "agent KIND" of kinds.
func agentWords(kinds ...string) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, "agent "+k)
	}
	return out
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
	want := config.Markdown()
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

// TestServeRefusesABadSettingFirst: a bad setting of the hub stops `cks
// serve` and `cks dev` before they listen or write anything, naming its
// variable (exit 1): the hub's, its HTTP server's, the model of a pipeline
// in the hub, the tests' clock hook.
func TestServeRefusesABadSettingFirst(t *testing.T) {
	for _, c := range []struct {
		cmd string
		env []string
		bad string
	}{
		{"serve", []string{"CKS_HTTP_IDLE_TIMEOUT=x"}, "CKS_HTTP_IDLE_TIMEOUT"},
		{"serve", []string{"CKS_LEADER_TTL=soon"}, "CKS_LEADER_TTL"},
		{"serve", []string{"CKS_PIPELINE_IN_PROCESS=true", "CKS_LLM_PROVIDER=bogus"}, "CKS_LLM_PROVIDER"},
		{"serve", []string{"CKS_TEST_CLOCK_SKEW=x"}, "CKS_TEST_CLOCK_SKEW"},
		{"dev", []string{"CKS_MCP_MAX_SESSIONS=0"}, "CKS_MCP_MAX_SESSIONS"},
	} {
		dir := filepath.Join(t.TempDir(), "never")
		res := runCKSIn(t, t.TempDir(), c.env, c.cmd, "--data-dir", dir, "--listen", "127.0.0.1:0")
		if res.code != 1 || !strings.Contains(res.stderr, c.bad) {
			t.Errorf("%s %v: exit %d, stderr %q; want 1 naming %s", c.cmd, c.env, res.code, res.stderr, c.bad)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s %v: the data directory was created despite the bad setting: %v", c.cmd, c.env, err)
		}
	}
}

package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/runtime/sweeper"
)

func TestSweeperCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	r := run("sweeper", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "lease_reaper") || !strings.Contains(r.stdout, "RUNNING") {
		t.Fatalf("sweeper list:\n%s%s", r.stdout, r.stderr)
	}
	r = run("sweeper", "stop", "dependency_release", "--json")
	var st struct {
		Running        bool  `json:"running"`
		DesiredRunning *bool `json:"desired_running"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil || st.Running || st.DesiredRunning == nil || *st.DesiredRunning {
		t.Fatalf("sweeper stop: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = run("sweeper", "list", "--json")
	var list struct {
		Sweepers []struct {
			AgentID string `json:"agent_id"`
			Running bool   `json:"running"`
		} `json:"sweepers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Sweepers) != 8 {
		t.Fatalf("sweeper list --json: %v\n%s", err, r.stdout)
	}
	for _, s := range list.Sweepers {
		if s.AgentID == "dependency_release" && s.Running {
			t.Fatal("stopped sweeper still running on the hub")
		}
	}
	r = run("sweeper", "status", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "lease_reaper") {
		t.Fatalf("unknown sweeper: exit %d %s", r.code, r.stderr)
	}
	if r = run("sweeper", "start", "dependency_release"); r.code != 0 || !strings.Contains(r.stdout, "true") {
		t.Fatalf("sweeper start:\n%s%s", r.stdout, r.stderr)
	}
	// graph_health's first pass runs at start-up; its status lists the counts.
	waitFor(t, "graph_health's first pass", func() bool {
		r = run("sweeper", "status", "graph_health")
		return r.code == 0 && strings.Contains(r.stdout, "Details of the last pass:")
	})
	for _, want := range []string{"graph_health", "orphans:", "dangling_edges:", "cycle_members:", "cycles:"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("sweeper status graph_health lacks %q:\n%s", want, r.stdout)
		}
	}
	// The retention sweeper (issue 26) reports what its pass pruned.
	waitFor(t, "retention's first pass", func() bool {
		r = run("sweeper", "status", "retention")
		return r.code == 0 && strings.Contains(r.stdout, "Details of the last pass:")
	})
	for _, want := range []string{"liveness_rows:      0", "tasks_archived:     0", "knowledge_archived: 0", `"168h0m0s"`,
		`tasks_age:          "off"`, `knowledge_age:      "off"`} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("sweeper status retention lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestPrintDetails(t *testing.T) {
	var b strings.Builder
	printDetails(&b, sweeper.GraphReport{Objects: 5, Edges: 4, Orphans: 2, CycleMembers: 3, Cycles: [][]int64{{1, 2, 3, 1}}})
	got := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for k, want := range map[string]string{"orphans": "2", "cycle_members": "3", "cycles": "[[1,2,3,1]]", "dangling_edges": "0",
		"objects": "5"} {
		if got[k] != want {
			t.Fatalf("details: %s is %q, want %q:\n%s", k, got[k], want, b.String())
		}
	}
	if !strings.HasPrefix(b.String(), "\nDetails of the last pass:\n") {
		t.Fatalf("details header:\n%s", b.String())
	}
	b.Reset()
	printDetails(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("nil details printed %q", b.String())
	}
}

func TestBadSweeperSetting(t *testing.T) {
	dir := t.TempDir() + "/data"
	r := runCKS(t, []string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL=often"}, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "CKS_LEASE_REAPER_SWEEPER_INTERVAL") {
		t.Fatalf("bad interval: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start created %s", dir)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTypeCLI: cks type pause, paused and resume against a hub; a paused
// type's task is not claimed and is once resumed; a token with control on
// /types/build may pause build and nothing else.
func TestTypeCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(env []string, args ...string) result {
		t.Helper()
		return runCKS(t, env, append(args, "--data-dir", string(h.dir))...)
	}
	claim := func() string {
		t.Helper()
		r := run(nil, "api", "claim_tasks", `{"worker":"w","types":["build"],"n":1}`)
		if r.code != 0 {
			t.Fatalf("claim: exit %d %s", r.code, r.stderr)
		}
		return r.stdout
	}
	if r := run(nil, "task", "create", "--type", "build", "--title", "t"); r.code != 0 {
		t.Fatalf("task create: exit %d %s", r.code, r.stderr)
	}
	r := run(nil, "type", "pause", "build", "--reason", "provider down")
	if r.code != 0 || !strings.Contains(r.stdout, "build") || !strings.Contains(r.stdout, "provider down") {
		t.Fatalf("type pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(nil, "type", "paused", "--json")
	var list struct {
		Types []struct {
			Type     string `json:"type"`
			PausedBy string `json:"paused_by"`
			Reason   string `json:"reason"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list.Types) != 1 ||
		list.Types[0].Type != "build" || list.Types[0].Reason != "provider down" || list.Types[0].PausedBy == "" {
		t.Fatalf("type paused --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if out := claim(); strings.Contains(out, `"task_id"`) {
		t.Fatalf("claimed a task of a paused type:\n%s", out)
	}

	r = run(nil, "token", "create", "--name", "builder-ops", "--grant", "control:/types/build", "--json")
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &created); r.code != 0 || err != nil {
		t.Fatalf("token create: exit %d %v %s", r.code, err, r.stderr)
	}
	scoped := []string{"CKS_TOKEN=" + created.Token}
	if r := run(scoped, "type", "pause", "lint"); r.code != 1 || !strings.Contains(r.stderr, "needs control on /types/lint") {
		t.Fatalf("scoped token pauses lint: exit %d %s", r.code, r.stderr)
	}
	if r := run(scoped, "type", "resume", "build"); r.code != 0 || !strings.Contains(r.stdout, "resumed build") {
		t.Fatalf("scoped token resumes build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := claim(); !strings.Contains(out, `"task_id"`) {
		t.Fatalf("no task claimed after resume:\n%s", out)
	}
	if r := run(nil, "type", "resume", "build"); r.code != 0 || !strings.Contains(r.stdout, "build was not paused") {
		t.Fatalf("second resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(nil, "type", "pause", "bad type"); r.code == 0 || !strings.Contains(r.stderr, "type") {
		t.Fatalf("pause of a malformed type: exit %d %s", r.code, r.stderr)
	}
	if r := run(nil, "type", "paused"); r.code != 0 || !strings.Contains(r.stdout, "no task type is paused") {
		t.Fatalf("type paused: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

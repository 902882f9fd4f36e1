package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLimitCLI (a real hub, SQLite): cks limit set caps a key that tasks
// made by cks task create --key carry, so a claim takes one of two tasks of
// the key and the task of another key; cks limit list (--json too) shows
// the key held at its cap; cks task update --key moves the second task
// under another key, and it is claimed; a malformed pattern is a usage
// error naming the field; cks limit delete deletes once.
func TestLimitCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	claim := func() []int64 {
		t.Helper()
		r := run("api", "claim_tasks", `{"worker":"w","types":["llm"],"n":5}`)
		var out struct {
			Tasks []struct {
				ID int64 `json:"task_id"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil {
			t.Fatalf("claim: exit %d %v %s", r.code, err, r.stderr)
		}
		var ids []int64
		for _, x := range out.Tasks {
			ids = append(ids, x.ID)
		}
		return ids
	}
	r := run("limit", "set", "openai", "--pattern", "openai:*", "--max-running", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "limit openai: 1 running per key matching openai:*") {
		t.Fatalf("limit set: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var ids []int64
	for _, key := range []string{"openai:gpt-5", "openai:gpt-5", "anthropic"} {
		r := run("task", "create", "--type", "llm", "--title", "t", "--key", key, "--key", "team:a", "--json")
		var task struct {
			ID   int64    `json:"task_id"`
			Keys []string `json:"concurrency_keys"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &task); r.code != 0 || err != nil || len(task.Keys) != 2 || task.Keys[0] != key {
			t.Fatalf("task create --key %s: exit %d %v\n%s%s", key, r.code, err, r.stdout, r.stderr)
		}
		ids = append(ids, task.ID)
	}
	if got := claim(); len(got) != 2 || got[0] != ids[0] || got[1] != ids[2] {
		t.Fatalf("claimed %v, want %d and %d (the second openai:gpt-5 task held back)", got, ids[0], ids[2])
	}
	r = run("limit", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "openai:gpt-5=1") {
		t.Fatalf("limit list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("limit", "list", "--json")
	var list struct {
		Limits []struct {
			Name      string `json:"name"`
			Saturated int    `json:"saturated"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list.Limits) != 1 || list.Limits[0].Saturated != 1 {
		t.Fatalf("limit list --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r := run("task", "show", "1"); r.code != 0 || !strings.Contains(r.stdout, "openai:gpt-5, team:a") {
		t.Fatalf("task show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("task", "update", "2", "--key", "openai:mini"); r.code != 0 {
		t.Fatalf("task update --key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := claim(); len(got) != 1 || got[0] != ids[1] {
		t.Fatalf("claimed %v after the update, want %d", got, ids[1])
	}
	if r := run("limit", "set", "x", "--pattern", "open*ai", "--max-running", "1"); r.code != 1 || !strings.Contains(r.stderr, "pattern") {
		t.Fatalf("limit set of a bad pattern: exit %d %s", r.code, r.stderr)
	}
	if r := run("limit", "set", "api", "--pattern", "api", "--starts", "60", "--interval", "1m"); r.code != 0 ||
		!strings.Contains(r.stdout, "limit api: 60 per 1m per key matching api") {
		t.Fatalf("limit set of a rate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("limit", "delete", "openai"); r.code != 0 || !strings.Contains(r.stdout, "deleted limit openai") {
		t.Fatalf("limit delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("limit", "delete", "openai"); r.code != 0 || !strings.Contains(r.stdout, "no limit openai") {
		t.Fatalf("second limit delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/backend/backendtest"
	"github.com/cks-dev/cks/driver/sqlite"
)

// TestDoctor: `cks doctor` against a real hub exits 0 on a clean database
// and 5 listing the task and field of a value stored before its bound
// existed (written here past the services, on the hub's own file), with
// --json for scripts and its progress on stderr.
func TestDoctor(t *testing.T) {
	h := startHub(t, "serve")
	env := []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token}
	res := runCKS(t, env, "doctor")
	if res.code != 0 || !strings.Contains(res.stdout, "nothing past a bound") || !strings.Contains(res.stderr, "checked 0 tasks") {
		t.Fatalf("doctor on a clean hub: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	ctx := context.Background()
	d, err := sqlite.Open(ctx, filepath.Join(string(h.dir), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := backend.New(d)
	defer s.Close()
	task, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "old", Title: "from before the bounds"})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.SetPayloadUnchecked(t, d, task.ID, []byte(strings.Repeat("[", 70)+strings.Repeat("]", 70)))

	res = runCKS(t, env, "doctor")
	id := strconv.FormatInt(task.ID, 10)
	if res.code != 5 || !strings.Contains(res.stdout, "task  "+id) || !strings.Contains(res.stdout, "payload") ||
		!strings.Contains(res.stderr, "1 stored values past today's bounds") {
		t.Fatalf("doctor with an old deep payload: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCKS(t, env, "doctor", "--json")
	if res.code != 5 || !strings.Contains(res.stdout, `"field": "payload"`) || !strings.Contains(res.stdout, `"id": `+id) {
		t.Fatalf("doctor --json: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

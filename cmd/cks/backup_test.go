package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cks-dev/cks/backend/backendtest"
)

// taskCount is the number of tasks `cks task list` lists on dir's hub.
func taskCount(t testing.TB, dir string) int {
	t.Helper()
	res := runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "task", "list", "--order", "id", "--limit", "1000", "--json")
	if res.code != 0 {
		t.Fatalf("task list: %d %s", res.code, res.stderr)
	}
	var page struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &page); err != nil {
		t.Fatalf("task list: %v: %s", err, res.stdout)
	}
	return len(page.Tasks)
}

func createTasks(t testing.TB, dir string, n int) {
	t.Helper()
	for range n {
		if res := runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "task", "create", "--type", "build"); res.code != 0 {
			t.Fatalf("task create: %d %s", res.code, res.stderr)
		}
	}
}

// TestBackupAndRestore: cks backup copies the database of a running hub
// (progress on stderr); a restore is refused while the hub runs, and once
// it is stopped puts the backup's state back — the task created after the
// backup is gone, and the database it replaced is kept with it.
func TestBackupAndRestore(t *testing.T) {
	h := startHub(t, "serve")
	dir := string(h.dir)
	createTasks(t, dir, 3)
	file := filepath.Join(t.TempDir(), "backup.db")
	res := runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "backup", file)
	if res.code != 0 || !strings.Contains(res.stderr, "pages (100%)") || !strings.Contains(res.stdout, "backed up") {
		t.Fatalf("backup: %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
	if res := runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "backup", file); res.code != 2 || !strings.Contains(res.stderr, "never overwrites") {
		t.Fatalf("backup over the backup: %d %s", res.code, res.stderr)
	}
	createTasks(t, dir, 1)
	if res := runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "restore", file); res.code != 1 || !strings.Contains(res.stderr, "a hub serves") {
		t.Fatalf("restore under a running hub: %d %s", res.code, res.stderr)
	}

	h.cmd.Process.Signal(syscall.SIGTERM)
	<-h.gone
	res = runCKS(t, []string{"CKS_DATA_DIR=" + dir}, "restore", file, "--json")
	var out struct{ Database, From, Kept string }
	if err := json.Unmarshal([]byte(res.stdout), &out); res.code != 0 || err != nil || out.Kept == "" {
		t.Fatalf("restore: %d %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
	}
	startHubIn(t, "serve", h.dir)
	if n := taskCount(t, dir); n != 3 {
		t.Fatalf("after the restore the hub has %d tasks, want the backup's 3", n)
	}
	if _, err := os.Stat(out.Kept); err != nil {
		t.Fatalf("the replaced database: %v", err)
	}
}

// TestBackupOfPostgresSaysPgDump: cks backup and restore work on the SQLite
// file; given a Postgres URL they say what to use instead (exit 2).
func TestBackupOfPostgresSaysPgDump(t *testing.T) {
	url := backendtest.PostgresURL(t)
	for _, cmd := range []string{"backup", "restore"} {
		res := runCKS(t, []string{"CKS_DATABASE_URL=" + url}, cmd, filepath.Join(t.TempDir(), "x.db"))
		if res.code != 2 || !strings.Contains(res.stderr, "pg_dump") {
			t.Fatalf("%s of Postgres: %d %s", cmd, res.code, res.stderr)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
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

// TestConnStringIsNeverAFile (issue 38.8): a libpq keyword/value string in
// CKS_DATABASE_URL is Postgres to every command — backup and restore say
// pg_dump, serve and doctor try the server — and none of them creates a
// file in the working directory or prints the password (on main serve
// created and served a SQLite file named after the string, backup backed
// it up and doctor printed it).
func TestConnStringIsNeverAFile(t *testing.T) {
	wd := t.TempDir()
	env := []string{"CKS_DATABASE_URL=host=127.0.0.1 port=1 user=cks password=hunter2 dbname=cks connect_timeout=2"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backup", filepath.Join(t.TempDir(), "x.db")}, 2, "pg_dump"},
		{[]string{"restore", filepath.Join(t.TempDir(), "x.db")}, 2, "pg_dump"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, 1, "127.0.0.1:1"},
		{[]string{"doctor", "--data-dir", t.TempDir()}, -1, "127.0.0.1:1"},
	} {
		res := runCKSIn(t, wd, env, c.args...)
		if c.code >= 0 && res.code != c.code || res.code == 0 || !strings.Contains(res.stdout+res.stderr, c.want) ||
			strings.Contains(res.stdout+res.stderr, "hunter2") {
			t.Errorf("cks %s: exit %d\n%s%s; want exit %d saying %q, no password", c.args[0], res.code, res.stdout, res.stderr, c.code, c.want)
		}
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Fatalf("the commands made %q in the working directory", entries[0].Name())
	}
}

// TestRestoreRefusedWhileAnyProcessHasTheDatabase (issue 38.2, 39.12): a
// hub of another data directory serving the same file with --database
// makes a restore fail, naming its pid, and changes nothing — the write it
// acknowledges afterwards is in the database (on main the restore went
// through under it and that write was lost). Once it is stopped the
// restore goes through; the backup's process, alive when the backup was
// taken, reads exited and does not block a second restore; and nothing but
// the database, its lock file and the kept copies is left in the data
// directory (no .partial, -wal or -shm files).
func TestRestoreRefusedWhileAnyProcessHasTheDatabase(t *testing.T) {
	h := startHub(t, "serve")
	dir := string(h.dir)
	createTasks(t, dir, 2)
	st, err := backend.Open(context.Background(), h.dir.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	row := backendtest.Liveness("agent-of-the-backup", "exec", 0)
	row.StartedAt, row.LastHeartbeatAt, row.LivenessIntervalS = time.Now(), time.Now(), 3600
	backendtest.MustUpsert(t, st, row)
	st.Close()
	file := filepath.Join(t.TempDir(), "backup.db")
	if res := runCKS(t, nil, "backup", file, "--data-dir", dir); res.code != 0 {
		t.Fatalf("backup: %d %s", res.code, res.stderr)
	}
	other := startHubDir(t, "serve", datadir.Dir(t.TempDir()), nil, "--database", filepath.Join(dir, "cks.db"))
	h.cmd.Process.Signal(syscall.SIGTERM)
	<-h.gone

	res := runCKS(t, nil, "restore", file, "--data-dir", dir)
	if pid := fmt.Sprintf("process %d", other.cmd.Process.Pid); res.code != 1 || !strings.Contains(res.stderr, pid) ||
		!strings.Contains(res.stderr, "in use") {
		t.Fatalf("restore while another hub has the database open: exit %d, stderr %s; want 1 naming %s", res.code, res.stderr, pid)
	}
	if _, _, err := client.New(other.url, other.token).CreateTask(context.Background(), cks.NewTask{Type: "build"}); err != nil {
		t.Fatalf("the other hub after the refused restore: %v", err)
	}
	if n := taskCount(t, string(other.dir)); n != 3 {
		t.Fatalf("the other hub has %d tasks after the refused restore, want 3", n)
	}
	other.cmd.Process.Signal(syscall.SIGTERM)
	<-other.gone

	var kept []string
	for i := range 2 {
		res := runCKS(t, nil, "restore", file, "--data-dir", dir, "--json")
		var out struct{ Kept string }
		if err := json.Unmarshal([]byte(res.stdout), &out); res.code != 0 || err != nil {
			t.Fatalf("restore %d: exit %d %v\n%s", i+1, res.code, err, res.stderr)
		}
		kept = append(kept, out.Kept)
		list := runCKS(t, nil, "process", "list", "--history", "--json", "--data-dir", dir)
		if list.code != 0 || strings.Contains(list.stdout, `"alive"`) || !strings.Contains(list.stdout, "agent-of-the-backup") {
			t.Fatalf("processes after restore %d: exit %d\n%s%s; want the backup's agent, not alive", i+1, list.code, list.stdout, list.stderr)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cks.db.before-restore-") {
			names = append(names, e.Name())
		}
	}
	if want := []string{"admin.token", "cks.db", "cks.db-lock", "hub.lock"}; !slices.Equal(names, want) || len(entries) != len(want)+2 {
		t.Fatalf("the data directory after two restores holds %d files, %q besides the kept ones; want %q and two kept", len(entries), names, want)
	}
	if n := offlineTaskCount(t, kept[0]); n != 3 {
		t.Fatalf("the database the first restore replaced holds %d tasks, want the 3 acknowledged", n)
	}
}

// offlineTaskCount is the number of tasks in the SQLite file at path.
func offlineTaskCount(t testing.TB, path string) int {
	t.Helper()
	st, err := backend.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.Tasks.ListTasks(context.Background(), cks.TaskFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Tasks)
}

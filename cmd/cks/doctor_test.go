package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// doctorJSON runs `cks doctor --json` and returns its exit status and its
// findings by check.
func doctorJSON(t testing.TB, env []string, args ...string) (int, map[string]finding, doctorReport) {
	t.Helper()
	res := runCKS(t, env, append([]string{"doctor", "--json"}, args...)...)
	var r doctorReport
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("doctor --json: exit %d: %v\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	by := map[string]finding{}
	for _, f := range r.Findings {
		by[f.Check] = f
	}
	if len(by) != len(doctorChecks) {
		t.Fatalf("doctor reported %d checks, want %d: %+v", len(by), len(doctorChecks), r.Findings)
	}
	if res.code != r.Exit {
		t.Fatalf("doctor exited %d, its report says %d", res.code, r.Exit)
	}
	return res.code, by, r
}

// wantFindings fails unless each check named has the status given.
func wantFindings(t testing.TB, by map[string]finding, want map[string]string) {
	t.Helper()
	for check, status := range want {
		if f := by[check]; f.Status != status {
			t.Errorf("%s: %s (%s), want %s", check, f.Status, f.Detail, status)
		}
		if f := by[check]; f.Status == "fail" && f.Fix == "" {
			t.Errorf("%s failed without a fix: %+v", check, f)
		}
	}
}

// TestDoctorDeployment: against a real hub on each backend, doctor checks
// the database directly (reachable, writable, schema, the clock: its own
// on Postgres), the hub, the token and the leader; it warns that no agent
// reports (exit 0) until one does, passes while it lives, fails (exit 16)
// naming its kind once it is killed, and a bad token is exit 14.
func TestDoctorDeployment(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := startHub(t, "serve", "--database", db.url)
		env := []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token, "CKS_DATABASE_URL=" + db.url}
		code, by, _ := doctorJSON(t, env)
		// No agent yet (an HTTP-only fleet never has one): a warning, not
		// a failure (issue 39.11; main failed it, exit 16).
		wantFindings(t, by, map[string]string{"database": "ok", "schema": "ok", "clock": "ok", "hub": "ok", "token": "ok",
			"leader": "ok", "agents": "warn", "stored": "ok"})
		if code != 0 || !strings.Contains(by["agents"].Detail, "no agent process has ever reported") {
			t.Fatalf("no agent: exit %d, agents %+v; want 0 and the warning", code, by["agents"])
		}
		clock := map[string]string{"sqlite": "one clock", "postgres": "the database's"}[db.backend]
		if !strings.Contains(by["clock"].Detail, clock) {
			t.Errorf("clock on %s: %q, want it to say %q", db.backend, by["clock"].Detail, clock)
		}

		a := startAgent(t, nil, append([]string{"critic", "--database", db.url}, fastAgent...)...)
		waitFor(t, "doctor to find the agent alive", func() bool { code, _, _ := doctorJSON(t, env); return code == 0 })
		if code, by, _ := doctorJSON(t, []string{"CKS_URL=" + h.url, "CKS_TOKEN=not-a-token"}); code != 14 ||
			by["token"].Status != "fail" || by["agents"].Status != "skipped" {
			t.Fatalf("bad token: exit %d, %+v", code, by)
		}
		a.kill()
		waitFor(t, "doctor to find the agent gone", func() bool {
			code, by, _ := doctorJSON(t, env)
			return code == 16 && strings.Contains(by["agents"].Detail, "critic")
		})
	})
}

// TestDoctorDatabase: the database checks fail with their exit status
// (10) when the database cannot be reached or refuses writes, and are
// skipped, not failed, when this host names none; a missing hub is 13.
func TestDoctorDatabase(t *testing.T) {
	pg := backendtest.PostgresURL(t)
	st, err := backend.Open(context.Background(), pg) // the schema, so that the read-only open succeeds
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	cases := []struct {
		name string
		env  []string
		code int
		want map[string]string
		says string
	}{
		{"unreachable", []string{"CKS_DATABASE_URL=postgres://cks@127.0.0.1:1/cks?sslmode=disable"}, 10,
			map[string]string{"database": "fail", "schema": "skipped", "clock": "skipped", "hub": "fail"}, "cannot reach"},
		{"read-only", []string{"CKS_DATABASE_URL=" + backendtest.ReadOnlyURL(pg)}, 10,
			map[string]string{"database": "fail", "schema": "ok", "clock": "ok", "hub": "fail"}, "does not take writes"},
		{"no file", []string{"CKS_DATABASE_URL=" + filepath.Join(t.TempDir(), "none.db")}, 10,
			map[string]string{"database": "fail", "hub": "fail"}, "no database file"},
		{"none named", []string{"CKS_DATA_DIR=" + t.TempDir()}, 13,
			map[string]string{"database": "skipped", "schema": "skipped", "clock": "skipped", "hub": "fail", "token": "skipped"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, by, _ := doctorJSON(t, c.env)
			wantFindings(t, by, c.want)
			if code != c.code || !strings.Contains(by["database"].Detail, c.says) {
				t.Fatalf("exit %d (want %d), database: %+v", code, c.code, by["database"])
			}
		})
	}
}

// TestDoctor: the stored-values check against a real hub exits 0 on a
// clean database and 5 listing the task and field of a value stored before
// its bound existed (written here past the services, on the hub's own
// file), with --json for scripts and its progress on stderr.
func TestDoctor(t *testing.T) {
	h := startHub(t, "serve")
	env := []string{"CKS_URL=" + h.url, "CKS_TOKEN=" + h.token}
	startAgent(t, nil, append([]string{"critic", "--data-dir", string(h.dir)}, fastAgent...)...)
	var res result
	waitFor(t, "the agent alive", func() bool { res = runCKS(t, env, "doctor"); return res.code != 16 })
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
		!strings.Contains(res.stdout, "fix: rewrite them") || !strings.Contains(res.stderr, "1 stored values past today's bounds") {
		t.Fatalf("doctor with an old deep payload: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCKS(t, env, "doctor", "--json")
	if res.code != 5 || !strings.Contains(res.stdout, `"field": "payload"`) || !strings.Contains(res.stdout, `"id": `+id) {
		t.Fatalf("doctor --json: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestDoctorClock: on Postgres doctor reports the skew of this host's clock
// (played by CKS_TEST_CLOCK_SKEW) and the correction cks applies: a host
// 30 s behind fails the clock check (exit 12) naming the skew and the
// offset cks corrects by, or that nothing corrects it.
func TestDoctorClock(t *testing.T) {
	pg := backendtest.PostgresURL(t)
	for _, c := range []struct {
		name string
		env  []string
		says []string
	}{
		{"corrected", nil, []string{"30s behind the database's", "cks corrects it by 30s", "the corrected clock reads"}},
		{"correction off", []string{"CKS_TEST_CLOCK_CORRECTION=off"}, []string{"30s behind the database's", "not corrected"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, by, _ := doctorJSON(t, append([]string{"CKS_DATABASE_URL=" + pg, "CKS_TEST_CLOCK_SKEW=-30s"}, c.env...))
			wantFindings(t, by, map[string]string{"database": "ok", "clock": "fail"})
			for _, s := range c.says {
				if !strings.Contains(by["clock"].Detail, s) {
					t.Errorf("clock: %q, want it to say %q", by["clock"].Detail, s)
				}
			}
			if code != 12 {
				t.Fatalf("exit %d, want 12 (the clock)", code)
			}
		})
	}
}

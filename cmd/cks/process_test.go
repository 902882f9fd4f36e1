package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

// TestProcessStopCLI: `cks process stop KIND|ID` against a real hub, with
// the liveness rows written from this process as agent processes would.
func TestProcessStopCLI(t *testing.T) {
	h := startHub(t, "serve")
	s := openStore(t, h.dir)
	backendtest.MustUpsert(t, s, freshRow("c0ffee00-1111-4222-8333-444455556666", "critic"))
	backendtest.MustUpsert(t, s, freshRow("e0000000-1111-4222-8333-444455556666", "enrichment"))
	gone := freshRow("d0000000-1111-4222-8333-444455556666", "pipeline")
	gone.LastHeartbeatAt = time.Now().Add(-48 * time.Hour)
	backendtest.MustUpsert(t, s, gone)
	run := func(env []string, args ...string) result {
		t.Helper()
		return runCKS(t, env, append(args, "--data-dir", string(h.dir))...)
	}
	desired := func(id string) string {
		t.Helper()
		r, err := s.Liveness.GetAgentLiveness(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return r.DesiredState
	}

	r := run(nil, "process", "stop", "critic")
	if want := "stop requested: critic instance c0ffee00-1111-4222-8333-444455556666; it finishes its current task and exits\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("process stop critic: exit %d\n%q\nwant %q\n%s", r.code, r.stdout, want, r.stderr)
	}
	if got := desired("c0ffee00-1111-4222-8333-444455556666"); got != cks.DesiredStopRequested {
		t.Fatalf("critic desired_state %q after stop, want %s", got, cks.DesiredStopRequested)
	}

	// By instance id, as JSON.
	r = run(nil, "process", "stop", "e0000000-1111-4222-8333-444455556666", "--json")
	var res cks.ProcessStopResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil ||
		res != (cks.ProcessStopResult{Found: true, InstanceID: "e0000000-1111-4222-8333-444455556666", ProcessKind: "enrichment"}) {
		t.Fatalf("process stop ID --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}

	// Nothing alive: exit 0, says so.
	for _, c := range []struct{ target, want string }{
		{"pipeline", "no alive pipeline process: nothing to stop\n"},
		{"fork_resolution", "no alive fork_resolution process: nothing to stop\n"},
		{"d0000000-1111-4222-8333-444455556666", "pipeline instance d0000000-1111-4222-8333-444455556666 is not alive: nothing to stop\n"},
	} {
		if r := run(nil, "process", "stop", c.target); r.code != 0 || r.stdout != c.want {
			t.Errorf("process stop %s: exit %d %q, want 0 %q\n%s", c.target, r.code, r.stdout, c.want, r.stderr)
		}
	}
	r = run(nil, "process", "stop", "fork_resolution", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"found": false`) {
		t.Fatalf("process stop fork_resolution --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := desired("d0000000-1111-4222-8333-444455556666"); got != "" {
		t.Fatalf("stopped pipeline desired_state %q, want none", got)
	}

	// No kind: the hub's refusal, naming the field, as it says it.
	r = run(nil, "process", "stop", "jani tor")
	if r.code != 1 || !strings.Contains(r.stderr, `process_kind`) || !strings.Contains(r.stderr, "(invalid_argument, HTTP 400)") {
		t.Fatalf("process stop 'jani tor': exit %d %s, want 1 with the hub's message", r.code, r.stderr)
	}
	for _, args := range [][]string{{"process", "stop"}, {"process", "stop", "critic", "pipeline"}} {
		if r := run(nil, args...); r.code != 2 || !strings.Contains(r.stderr, "exactly one KIND") {
			t.Errorf("%v: exit %d %s, want 2", args, r.code, r.stderr)
		}
	}
	if r := run(nil, "process", "start", "critic"); r.code != 2 || !strings.Contains(r.stderr, "stop KIND|ID") {
		t.Errorf("process start: exit %d %s, want 2 naming the subcommands", r.code, r.stderr)
	}

	// Permission: control on /processes/KIND of the process named.
	_, pipeTok, err := auth.CreateToken(context.Background(), s.Principals, nil, "ops",
		[]cks.Grant{{Resource: "/processes/pipeline", Permission: auth.PermControl}})
	if err != nil {
		t.Fatal(err)
	}
	r = run([]string{"CKS_TOKEN=" + pipeTok}, "process", "stop", "critic")
	if r.code != 1 || !strings.Contains(r.stderr, "needs control on /processes/critic") || !strings.Contains(r.stderr, "HTTP 403") {
		t.Fatalf("process stop critic with control on /processes/pipeline: exit %d %s", r.code, r.stderr)
	}
	if r = run([]string{"CKS_TOKEN=" + pipeTok}, "process", "stop", "pipeline"); r.code != 0 || !strings.Contains(r.stdout, "nothing to stop") {
		t.Fatalf("process stop pipeline with control on it: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestProcessReportCLI: a script is a process too: `cks process report`
// heartbeats it, `cks process stop` reaches it in the next report's
// answer, and --exited ends it.
func TestProcessReportCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	report := []string{"process", "report", "nightly-backup", "--instance-id", "sh-1", "--liveness-interval-s", "60"}
	if r := run(report...); r.code != 0 || !strings.Contains(r.stdout, "nightly-backup") || !strings.Contains(r.stdout, "alive") {
		t.Fatalf("first report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("process", "stop", "nightly-backup"); r.code != 0 || !strings.Contains(r.stdout, "stop requested: nightly-backup instance sh-1") {
		t.Fatalf("stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(report...); r.code != 0 || !strings.Contains(r.stdout, "stop requested: finish the task in hand and report --exited") {
		t.Fatalf("report after the stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := run(append(report, "--exited", "--json")...)
	var p cks.Process
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 0 || err != nil || p.Status != cks.ProcessStopped || p.ExitedAt.IsZero() {
		t.Fatalf("last report: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
}

// TestProcessListWithoutHub: once the hub is gone — stopped (its hub.url
// removed) or killed (nothing listens at its URL) — `cks process list`
// and `process status` read the data directory's database directly, say
// so on stderr and show the final states; with a URL given, or no
// database to read, they report the hub's absence as before.
func TestProcessListWithoutHub(t *testing.T) {
	for _, how := range []string{"stopped", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			h := startHub(t, "serve")
			s := openStore(t, h.dir)
			ctx := context.Background()
			if err := s.Liveness.UpsertAgentLiveness(ctx, freshRow("c0ffee00-aaaa-4222-8333-444455556666", "critic")); err != nil {
				t.Fatal(err)
			}
			gone := freshRow("e0000000-aaaa-4222-8333-444455556666", "exec")
			gone.ExitedAt = gone.LastHeartbeatAt
			if err := s.Liveness.UpsertAgentLiveness(ctx, gone); err != nil {
				t.Fatal(err)
			}
			url := h.url
			if how == "stopped" {
				h.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-h.gone:
				case <-time.After(30 * time.Second):
					t.Fatalf("the hub did not stop on SIGTERM\n%s", h.stderr.String())
				}
			}
			h.kill()
			run := func(args ...string) result {
				t.Helper()
				return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
			}
			why := map[string]string{"stopped": "no hub serves from data directory " + string(h.dir),
				"killed": "no hub answers at " + url + " (connection refused)"}[how]
			note := ": read from the database " + filepath.Join(string(h.dir), "cks.db") + " directly\n"
			r := run("process", "list")
			if r.code != 0 || !strings.HasPrefix(r.stderr, "cks: "+why) || !strings.HasSuffix(r.stderr, note) || !strings.Contains(r.stdout, "c0ffee00  ") ||
				!regexp.MustCompile(`exec +e0000000 .* stopped +exited`).MatchString(r.stdout) {
				t.Fatalf("process list without a hub: exit %d\n%s%s\nwant the note %q…%q", r.code, r.stdout, r.stderr, why, note)
			}
			r = run("process", "status", "critic", "--json")
			var p cks.Process
			if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 0 || err != nil || p.Status != cks.ProcessAlive || !strings.HasSuffix(r.stderr, note) {
				t.Fatalf("process status without a hub: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
			}
			if r := run("process", "status", "jani/tor"); r.code != 1 || !strings.Contains(r.stderr, `invalid process_kind: expected a process kind`) ||
				!strings.Contains(r.stderr, `"jani/tor"`) {
				t.Fatalf("process status jani/tor without a hub: exit %d %s, want the operation's refusal", r.code, r.stderr)
			}
			if r := run("process", "list", "--url", url, "--token", h.token); r.code != 1 || !strings.Contains(r.stderr, "cannot reach the hub") ||
				strings.Contains(r.stderr, "directly") {
				t.Fatalf("process list --url of a gone hub: exit %d %s, want the hub's absence", r.code, r.stderr)
			}
			empty := t.TempDir()
			if r := runCKS(t, nil, "process", "list", "--data-dir", empty); r.code != 1 || !strings.Contains(r.stderr, "no hub URL") {
				t.Fatalf("process list on an empty data directory: exit %d %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(empty, "cks.db")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("process list made a database in an empty data directory: %v", err)
			}
		})
	}
}

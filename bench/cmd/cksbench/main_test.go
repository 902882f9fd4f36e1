package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks/bench/internal/proc"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// TestMain fails the run when a goroutine a benchmark started (a store's)
// outlives it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// result is one `cksbench` run's exit status and output.
type result struct {
	code           int
	stdout, stderr string
}

func runBench(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, env{stdout: &stdout, stderr: &stderr})
	return result{code, stdout.String(), stderr.String()}
}

// backends are the --database of each backend's runs: none (a temporary
// SQLite file), and a Postgres scratch schema's URL (skipped without
// CKS_TEST_DATABASE_URL, failed under CI=true).
var backends = []struct {
	name     string
	database func(t *testing.T) []string
}{
	{"sqlite", func(*testing.T) []string { return nil }},
	{"postgres", func(t *testing.T) []string { return []string{"--database", backendtest.PostgresURL(t)} }},
}

// TestLedgerSmoke: `cksbench ledger --json` (what `cks bench ledger` was)
// prints a result per worker count as JSON on stdout, its progress on
// stderr, and writes the CPU and allocation profiles asked for, on each
// backend. The subtests run one after another: one CPU profile at a time.
func TestLedgerSmoke(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			profile, allocs := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
			r := runBench(t, append([]string{"ledger", "--tasks", "300", "--workers", "1,3", "--json", "--cpuprofile", profile,
				"--memprofile", allocs}, b.database(t)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			// A pprof profile is gzipped protobuf.
			for flag, path := range map[string]string{"--cpuprofile": profile, "--memprofile": allocs} {
				if b, err := os.ReadFile(path); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
					t.Errorf("%s wrote no profile: %v, %d bytes", flag, err, len(b))
				}
			}
			var out struct {
				Backend string `json:"backend"`
				Results []struct {
					Workers      int     `json:"workers"`
					CompleteRate float64 `json:"complete_per_s"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Backend != b.name || len(out.Results) != 2 ||
				out.Results[1].Workers != 3 || out.Results[1].CompleteRate <= 0 {
				t.Fatalf("output: %v\n%s", err, r.stdout)
			}
			if !strings.Contains(r.stderr, "work") || !strings.Contains(r.stderr, "300/300") {
				t.Fatalf("no progress:\n%s", r.stderr)
			}
		})
	}
}

// TestStopSmoke: `cksbench stop` starts and stops real `cks agent
// pipeline` processes on each path: on SQLite of a cks it builds from this
// checkout (no --cks: how docs/benchmarks.md runs it), on Postgres of the
// binary --cks names (how scripts/bench-ab runs a commit's).
func TestStopSmoke(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			args := append([]string{"stop", "--rounds", "1", "--liveness-interval", "100ms", "--json"}, b.database(t)...)
			if b.name == "postgres" {
				bin, err := proc.BuildCKS(context.Background(), t.TempDir(), os.Stderr)
				if err != nil {
					t.Fatal(err)
				}
				args = append(args, "--cks", bin)
			}
			r := runBench(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var out struct {
				Backend string `json:"backend"`
				Results map[string]struct {
					Rounds int   `json:"rounds"`
					P50    int64 `json:"stop_p50_ns"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Backend != b.name || len(out.Results) != 2 ||
				out.Results["fast path"].Rounds != 1 || out.Results["tick only"].P50 <= 0 {
				t.Fatalf("output: %v\n%s", err, r.stdout)
			}
			if built := strings.Contains(r.stderr, "building cks"); built != (b.name == "sqlite") {
				t.Errorf("built cks: %v, with --cks given: %v\n%s", built, b.name == "postgres", r.stderr)
			}
		})
	}
}

// TestUsage: no benchmark name, an unknown one, a bad flag value and an
// argument are usage errors (exit 2, naming the benchmarks or the flag);
// --help lists every benchmark, NAME --help every flag of NAME's.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "ledger"},
		{[]string{"nope"}, "no benchmark \"nope\": ledger, abort, delayed, liveness, stop, pipeline, knowledge"},
		{[]string{"ledger", "--tasks", "0"}, "--tasks"},
		{[]string{"ledger", "--workers", "1,x"}, "--workers"},
		{[]string{"abort", "extra"}, "takes no arguments"},
		{[]string{"stop", "--database", "sqlite:x.db"}, "--database takes a postgres:// URL"},
	} {
		if r := runBench(t, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("cksbench %q: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	r := runBench(t, "--help")
	for _, b := range benchmarks {
		if r.code != 0 || !strings.Contains(r.stdout, "  "+b.name+" ") {
			t.Errorf("cksbench --help: exit %d, does not list %s:\n%s", r.code, b.name, r.stdout)
		}
	}
	r = runBench(t, "stop", "--help")
	for _, fl := range []string{"-database", "-rounds", "-liveness-interval", "-cks", "-json"} {
		if r.code != 0 || !strings.Contains(r.stderr, fl) {
			t.Errorf("cksbench stop --help: exit %d, does not name %s:\n%s", r.code, fl, r.stderr)
		}
	}
}

// Command fleet measures what a fleet of idle agents costs a hub: N
// agents, each with a connection of its own, long-poll claim_tasks (wait_s)
// against a real `cks serve` process at its default settings, and the
// command reads the hub's CPU time and resident memory from /proc while
// they wait, then how soon a task created meanwhile reaches one of them.
//
//	cd bench && go run ./cmd/fleet [--agents 10000] [--database postgres://…]
//
// Without --database the hub runs on its embedded SQLite in a temporary
// data directory. It prints one Markdown table row per run (docs/benchmarks.md,
// "A fleet on one hub").
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks/bench/internal/proc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

type config struct {
	agents   int
	wait     time.Duration
	window   time.Duration
	wakes    int
	database string
	conns    string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.IntVar(&c.agents, "agents", 10_000, "idle agents, each with a connection of its own")
	fs.DurationVar(&c.wait, "wait", 60*time.Second, "each claim's wait_s (at most 60 s)")
	fs.DurationVar(&c.window, "window", 60*time.Second, "how long the waiting fleet is measured")
	fs.IntVar(&c.wakes, "wakes", 20, "tasks created one at a time to time how soon a waiting agent has one")
	fs.StringVar(&c.database, "database", "", "postgres://… URL for the hub (default: its embedded SQLite)")
	fs.StringVar(&c.conns, "conns-per-ip", "", "the hub's CKS_HTTP_MAX_CONNS_PER_IP (default: the hub's default; 0: no cap)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "cks-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say(stderr, "building cks")
	bin, err := proc.BuildCKS(ctx, dir, stderr)
	if err != nil {
		return err
	}
	h, err := startHub(ctx, bin, filepath.Join(dir, "data"), c, stderr)
	if err != nil {
		return err
	}
	defer h.stop()
	r, err := measure(ctx, h, c, stderr)
	if err != nil {
		return err
	}
	backend := "SQLite"
	if c.database != "" {
		backend = "Postgres"
	}
	fmt.Fprintln(stdout, "| backend | agents | wait_s | hub CPU (cores) | hub RSS per agent | claims/s | database commits/s | wake p50 / max |")
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|")
	commits := "—"
	if r.commits >= 0 {
		commits = fmt.Sprintf("%.1f", r.commits)
	}
	fmt.Fprintf(stdout, "| %s | %d | %.0f | %.4f | %.1f KB | %.1f | %s | %v / %v |\n", backend, c.agents, c.wait.Seconds(),
		r.cores, r.rssPerAgent/1024, r.claims, commits, r.wakeP50.Round(100*time.Microsecond), r.wakeMax.Round(100*time.Microsecond))
	return nil
}

func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "fleet: "+format+"\n", args...)
}

// hub is a `cks serve` process.
type hub struct {
	cmd   *exec.Cmd
	url   string
	token string
	done  chan struct{}
}

func startHub(ctx context.Context, bin, dataDir string, c config, stderr io.Writer) (*hub, error) {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir}
	if c.database != "" {
		args = append(args, "--database", c.database)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = os.Environ()
	if c.conns != "" {
		cmd.Env = append(cmd.Env, "CKS_HTTP_MAX_CONNS_PER_IP="+c.conns)
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &hub{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(h.done) }() //nolint:errcheck // its exit is the stop
	deadline := time.Now().Add(time.Minute)
	for {
		url, uerr := os.ReadFile(filepath.Join(dataDir, "hub.url"))
		tok, terr := os.ReadFile(filepath.Join(dataDir, "admin.token"))
		if uerr == nil && terr == nil {
			h.url, h.token = strings.TrimSpace(string(url)), strings.TrimSpace(string(tok))
			if resp, err := http.Get(h.url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return h, nil
				}
			}
		}
		select {
		case <-h.done:
			return nil, fmt.Errorf("cks serve exited: %s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.stop()
			return nil, fmt.Errorf("cks serve did not answer within a minute: %s", logs.String())
		}
	}
}

func (h *hub) stop() {
	h.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // gone already is fine
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill() //nolint:errcheck // as above
		<-h.done
	}
}

// call sends one operation to the hub as the admin.
func (h *hub) call(ctx context.Context, client *http.Client, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode/100 != 2 {
		err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, err
}

// metric reads one gauge of the hub's /metrics.
func (h *hub) metric(ctx context.Context, name string) (float64, error) {
	b, err := h.call(ctx, http.DefaultClient, "GET", "/metrics", "")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
}

// usage is the hub process's CPU time and resident memory.
func (h *hub) usage() (cpu time.Duration, rss int64, err error) {
	pid := h.cmd.Process.Pid
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb * 1024
		}
	}
	return st.CPU(), rss, nil
}

type result struct {
	cores            float64
	rssPerAgent      float64
	claims           float64
	commits          float64 // per second; -1 on SQLite
	wakeP50, wakeMax time.Duration
}

// agent is one idle agent: a connection of its own, claiming with a wait
// until ctx ends; a claimed task is sent on got.
func agent(ctx context.Context, h *hub, wait time.Duration, claims *atomic.Int64, got chan<- time.Time, errs *atomic.Int64) {
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	body := fmt.Sprintf(`{"types":["fleet"],"wait_s":%.0f,"running":true}`, wait.Seconds())
	for ctx.Err() == nil {
		b, err := h.call(ctx, client, "POST", "/v1/tasks/claim", body)
		if err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
				time.Sleep(time.Second) // a refused agent backs off, as an SDK does
			}
			continue
		}
		claims.Add(1)
		var out struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if json.Unmarshal(b, &out) == nil && len(out.Tasks) > 0 {
			got <- time.Now()
		}
	}
}

func measure(ctx context.Context, h *hub, c config, stderr io.Writer) (result, error) {
	var r result
	_, rss0, err := h.usage()
	if err != nil {
		return r, err
	}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var claims, errs atomic.Int64
	got := make(chan time.Time, c.agents)
	say(stderr, "starting %d agents (wait_s %.0f)", c.agents, c.wait.Seconds())
	for i := range c.agents {
		wg.Go(func() { agent(actx, h, c.wait, &claims, got, &errs) })
		if (i+1)%1000 == 0 {
			say(stderr, "%d agents started", i+1)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n, err := h.metric(ctx, "cks_claims_waiting")
		if err != nil {
			return r, err
		}
		if int(n) >= c.agents {
			break
		}
		say(stderr, "%.0f of %d claims waiting (%d refused so far)", n, c.agents, errs.Load())
		if time.Now().After(deadline) {
			return r, fmt.Errorf("only %.0f of %d claims waiting after 5 minutes (%d refused)", n, c.agents, errs.Load())
		}
		time.Sleep(time.Second)
	}
	var pg *pgx.Conn
	commits := func() (int64, error) { return 0, nil }
	if c.database != "" {
		if pg, err = pgx.Connect(ctx, c.database); err != nil {
			return r, err
		}
		defer pg.Close(context.WithoutCancel(ctx))
		commits = func() (int64, error) {
			if _, err := pg.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				return 0, err
			}
			var n int64
			err := pg.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
			return n, err
		}
	}
	say(stderr, "all %d waiting; measuring %v", c.agents, c.window)
	cpu0, _, err := h.usage()
	if err != nil {
		return r, err
	}
	claims0, commits0 := claims.Load(), int64(0)
	if commits0, err = commits(); err != nil {
		return r, err
	}
	start := time.Now()
	time.Sleep(c.window)
	elapsed := time.Since(start)
	cpu1, rss1, err := h.usage()
	if err != nil {
		return r, err
	}
	commits1, err := commits()
	if err != nil {
		return r, err
	}
	r.cores = (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	r.rssPerAgent = float64(rss1-rss0) / float64(c.agents)
	r.claims = float64(claims.Load()-claims0) / elapsed.Seconds()
	r.commits = -1
	if c.database != "" {
		// Less the measuring connection's own two statements a read.
		r.commits = float64(commits1-commits0-2) / elapsed.Seconds()
	}
	say(stderr, "timing %d wakes", c.wakes)
	var wakes []time.Duration
	for i := range c.wakes {
		created := time.Now()
		if _, err := h.call(ctx, http.DefaultClient, "POST", "/v1/tasks", fmt.Sprintf(`{"type":"fleet","title":"wake %d"}`, i)); err != nil {
			return r, err
		}
		select {
		case at := <-got:
			wakes = append(wakes, at.Sub(created))
		case <-time.After(time.Minute):
			return r, errors.New("no agent had the task within a minute")
		}
	}
	if len(wakes) > 0 {
		slices.Sort(wakes)
		r.wakeP50, r.wakeMax = wakes[len(wakes)/2], wakes[len(wakes)-1]
	}
	if n := errs.Load(); n > 0 {
		say(stderr, "%d claims were refused or failed", n)
	}
	return r, nil
}

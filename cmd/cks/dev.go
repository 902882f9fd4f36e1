package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/cmd/cks/internal/shutdown"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
)

// devAgentKinds are the seed agents `cks dev` starts.
var devAgentKinds = []string{"critic", "enrichment", "fork_resolution", "pipeline"}

// devAgentStopTimeout bounds how long `cks dev` waits for its agents to drain
// after SIGTERM before it kills them.
const devAgentStopTimeout = 10 * time.Second

// devInterruptTimeout bounds how long `cks dev` waits, once it has told
// its agents to interrupt their tasks, before it kills them: the exec
// agent's kill grace (agents.DefaultKillGrace) and the give-back's write.
const devInterruptTimeout = agents.DefaultKillGrace + 10*time.Second

// devAgentStartTimeout bounds how long `cks dev` waits for its agents' first
// heartbeats before it prints the banner anyway.
const devAgentStartTimeout = 15 * time.Second

// cmdDev runs a hub on the embedded SQLite default (or --database) and, once
// it serves, the four seed agents — and an exec agent when asked — as child
// processes of this binary against the same database. On SIGINT/SIGTERM it
// stops the agents (SIGTERM, a bounded wait, then SIGKILL) before the hub.
// An agent that crashes is restarted after a backoff; one that exits as
// asked (`cks process stop`: status 0) stays stopped (devFleet.reap). One
// that could not say it exited (killed after the grace period, or dead) is
// recorded as exited, its leases released (devFleet.recordExit). A closed
// stderr (`cks dev 2>&1 | tee`, the tee stopped by the same Ctrl-C)
// neither kills it nor loses the log: SIGPIPE is caught, and the log goes
// on in the data directory (logSink).
func cmdDev(ctx context.Context, args []string, e env) error {
	d, err := parseDev(args, e)
	if err != nil {
		return err
	}
	catchSIGPIPE()
	dir, _ := d.sf.resolve(e)
	dbURL := or(d.sf.database, dir.DatabaseURL()) // dev uses the embedded default unless --database
	sink := &logSink{w: e.stderr, file: filepath.Join(string(dir), devLogFile)}
	defer sink.Close()
	e.stderr = sink
	log := logger(sink)
	cfg, err := hubConfig(e, dir, dbURL, d.listen)
	if err != nil {
		return err
	}
	cfg.Logger = log

	// The hub runs under its own context so that it outlives the agents at
	// shutdown: they stop first, while the hub still serves.
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	ready := make(chan hub.Ready, 1)
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx, cfg, func(r hub.Ready) { ready <- r }) }()
	var r hub.Ready
	select {
	case r = <-ready:
	case err := <-hubDone:
		return err
	}
	fleet := &devFleet{log: log, stderr: sink, quit: make(chan struct{})}
	if !d.noAgents {
		st, err := openBackend(ctx, dbURL, e)
		if err != nil {
			log.Warn("cannot open the database to record agents that die as exited", "err", err)
		} else {
			defer st.Close()
			fleet.rec, fleet.rows = &agents.ExitRecorder{Tasks: st.Tasks, Liveness: st.Liveness}, st.Liveness.ListAgentLiveness
		}
	}
	startErr := d.runFleet(ctx, fleet, r, dir, dbURL, e, hubDone)
	stopHub()
	if err := <-hubDone; err != nil {
		return err
	}
	return startErr
}

// runFleet starts the agents, prints the banner and waits for ctx (Ctrl-C)
// or the hub's end (which it passes on to hubDone), then stops the agents.
func (d *devRun) runFleet(ctx context.Context, fleet *devFleet, r hub.Ready, dir datadir.Dir, dbURL string, e env, hubDone chan error) error {
	var specs []devAgent
	if !d.noAgents {
		for _, k := range devAgentKinds {
			specs = append(specs, devAgent{kind: k, args: []string{"agent", k, "--database", dbURL}})
		}
		if len(d.command) > 0 {
			specs = append(specs, devAgent{kind: "exec", args: append([]string{"agent", "exec", "--database", dbURL,
				"--types", strings.Join(d.types, ","), "--"}, d.command...)})
		}
	}
	defer fleet.stop(d.grace)
	if ctx.Err() != nil {
		return nil
	}
	if err := fleet.start(specs); err != nil {
		return err
	}
	tok, _ := dir.ReadToken()
	fleet.waitReported(ctx, client.New(r.URL, tok), devAgentStartTimeout)
	if ctx.Err() != nil {
		return nil
	}
	printDevBanner(e.stdout, r, dir, fleet.started())
	select {
	case <-ctx.Done():
	case err := <-hubDone:
		hubDone <- err // for cmdDev, once the agents are stopped
	}
	return nil
}

// devRun is what `cks dev` was asked to run.
type devRun struct {
	sf       storeFlags
	listen   string
	noAgents bool
	grace    time.Duration // how long the agents may drain at Ctrl-C
	types    []string      // the exec agent's task types
	command  []string      // the exec agent's command, after --
}

// parseDev reads `cks dev [flags] [-- COMMAND ARGS…]`.
func parseDev(args []string, e env) (*devRun, error) {
	d := &devRun{}
	if i := slices.Index(args, "--"); i >= 0 {
		args, d.command = args[:i], args[i+1:]
	}
	fs := flagSet("dev", e)
	d.sf.register(fs)
	fs.StringVar(&d.listen, "listen", "", "address `HOST:PORT` to listen on (env CKS_LISTEN; default "+hub.DefaultListen+")")
	fs.BoolVar(&d.noAgents, "no-agents", false, "start only the hub, no agent processes")
	d.grace = devAgentStopTimeout
	fs.Var(config.IntervalFlag(&d.grace), "agent-grace", "how long the agents have at Ctrl-C to finish their tasks "+
		"and exit; then they interrupt them and give them back (OPEN, attempts not counted), and are killed "+
		"(recorded as exited, their tasks released) if they have not exited "+devInterruptTimeout.String()+" later; a `DURATION`")
	execTypes := fs.String("exec-types", "", "also start an exec agent (cks agent exec) for these comma-separated task types `T1,T2`, running the COMMAND after --")
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, fmt.Errorf("%w: dev takes no arguments (an exec agent's command goes after --), got %q", errUsage, pos)
	}
	d.types = config.SplitTypes(*execTypes)
	switch {
	case d.grace <= 0:
		return nil, fmt.Errorf("%w: dev --agent-grace: expected a positive duration, got %s", errUsage, d.grace)
	case len(d.types) > 0 && len(d.command) == 0:
		return nil, fmt.Errorf("%w: dev --exec-types needs the exec agent's command after --", errUsage)
	case len(d.command) > 0 && len(d.types) == 0:
		return nil, fmt.Errorf("%w: dev: a command after -- needs --exec-types T1,T2 (the task types it works)", errUsage)
	case len(d.command) > 0 && d.noAgents:
		return nil, fmt.Errorf("%w: dev: --no-agents and an exec agent command exclude each other", errUsage)
	case len(d.command) > 0:
		// Refused before the hub starts, not by an agent that fails
		// every task it claims.
		if err := (agents.ExecConfig{Command: d.command}).Check(); err != nil {
			return nil, fmt.Errorf("%w: dev: %w", errUsage, err)
		}
	}
	return d, nil
}

// printDevBanner says where the hub is, which agents run and how to watch
// them — or, with none, how to start one — and how to call the hub with
// the CLI as this one was run (`go run ./cmd/cks` or the binary).
func printDevBanner(w io.Writer, r hub.Ready, dir datadir.Dir, started []*devChild) {
	tok, _ := dir.ReadToken()
	cli := cliName()
	dd := ""
	if dir != datadir.Default {
		dd = " --data-dir " + string(dir)
	}
	var agentsLine strings.Builder
	for i, c := range started {
		if i > 0 {
			agentsLine.WriteString(", ")
		}
		fmt.Fprintf(&agentsLine, "%s (pid %d)", c.kind, c.cmd.Process.Pid)
	}
	agentsLine.WriteString("\n           their logs are on this stderr, each line prefixed with its kind")
	stop := "Press Ctrl-C to stop (the agents first, then the hub)."
	if len(started) == 0 {
		agentsLine.Reset()
		db := dd
		if r.Backend != "sqlite" {
			db = " --database URL" // the hub's, which the banner does not show
		}
		fmt.Fprintf(&agentsLine, "none (--no-agents); start one beside the hub with: %s agent KIND%s", cli, db)
		stop = "Press Ctrl-C to stop the hub."
	}
	fmt.Fprintf(w, `
cks dev is running on %s (%s).

  Studio:  %s/   (sign in with the admin token)
  Token:   %s   (also in %s)
  Agents:  %s
  CLI:     %s process list%s    (agent liveness; stop one with: process stop KIND)

%s
`, r.URL, r.Backend, r.URL, tok, r.TokenFile, agentsLine.String(), cli, dd, stop)
}

// cliName is how to run this CLI again: `go run ./cmd/cks` when this is a
// binary go run built, cks when the cks on $PATH is this binary, else the
// path this one was run by.
func cliName() string {
	self, err := os.Executable()
	if err != nil {
		return "cks"
	}
	if strings.Contains(self, string(os.PathSeparator)+"go-build") {
		return "go run ./cmd/cks"
	}
	if onPath, err := exec.LookPath("cks"); err == nil {
		a, aerr := os.Stat(onPath)
		b, berr := os.Stat(self)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "cks"
		}
	}
	return os.Args[0]
}

// devAgent is one agent process `cks dev` starts: its kind and its arguments
// to this binary.
type devAgent struct {
	kind string
	args []string
}

// devChild is a started agent process.
type devChild struct {
	devAgent     // how it was started, to restart it
	crashes  int // the crashes in a row before this start (restartWait)
	cmd      *exec.Cmd
	started  time.Time     // just before it was started
	done     chan struct{} // closed once the process was reaped (and recorded)
}

// devFleet is the agents of one `cks dev`.
type devFleet struct {
	log    *slog.Logger
	stderr io.Writer
	outMu  sync.Mutex // serialises the prefixed lines of all children
	// rec records an agent that could not say it exited; rows reads the
	// liveness rows to find its own. Nil when the database could not be
	// opened.
	rec  *agents.ExitRecorder
	rows func(context.Context) ([]cks.AgentLiveness, error)

	self string        // this binary, which the agents are
	quit chan struct{} // closed by stop: a restart waiting its backoff gives up

	mu       sync.Mutex
	children []*devChild // every agent started, the exited and the restarted included
	stopping bool
}

// start starts every agent, up to the first that cannot be started (the
// caller stops those already running).
func (f *devFleet) start(specs []devAgent) error {
	if len(specs) == 0 {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("dev: cannot find this binary to start the agents: %w", err)
	}
	f.self = self
	for _, s := range specs {
		if _, err := f.startOne(s, 0); err != nil {
			return err
		}
	}
	return nil
}

// startOne starts the agent of spec, the crashes-th restart of a run of
// crashes (0 for its first start), unless the fleet is stopping (then it
// returns nil, nil): under f.mu, so stop, which sets stopping under it,
// signals every child started.
func (f *devFleet) startOne(s devAgent, crashes int) (*devChild, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return nil, nil
	}
	cmd := exec.Command(f.self, s.args...)
	w := &prefixWriter{mu: &f.outMu, w: f.stderr, prefix: fmt.Sprintf("%-15s | ", s.kind)}
	cmd.Stdout, cmd.Stderr = w, w
	// Own process group: a Ctrl-C at the terminal reaches only cks dev,
	// which then stops each agent once (a second signal would make an
	// agent skip its drain).
	cmd.SysProcAttr = devSysProcAttr()
	c := &devChild{devAgent: s, crashes: crashes, cmd: cmd, started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dev: start agent %s: %w", s.kind, err)
	}
	f.children = append(f.children, c)
	go f.reap(c, w)
	return c, nil
}

// The restart backoff of an agent that crashed: devRestartFirst after its
// first crash, doubling with each crash that follows within devStableRun
// of its start, at most devRestartMax.
const (
	devRestartFirst = time.Second
	devRestartMax   = 30 * time.Second
	devStableRun    = time.Minute
)

// restartWait is the wait before the restart that follows the crashes-th
// crash in a row.
func restartWait(crashes int) time.Duration {
	d := devRestartFirst
	for i := 1; i < crashes && d < devRestartMax; i++ {
		d *= 2
	}
	return min(d, devRestartMax)
}

// reap waits for child c to exit, records it as exited when it could not
// say so itself, and decides what follows an exit that was not asked for
// by cks dev: an agent that exited with status 0 was asked to stop (`cks
// process stop`) and stays stopped (info); one that exited 2 was refused
// its flags or settings, which a restart cannot mend (error); any other
// exit — a crash, kill -9 — is restarted after a backoff (restartWait),
// the crash logged as an error.
func (f *devFleet) reap(c *devChild, w *prefixWriter) {
	err := c.cmd.Wait()
	w.flush()
	f.recordExit(c)
	f.mu.Lock()
	stopping := f.stopping
	f.mu.Unlock()
	close(c.done)
	pid, status := c.cmd.Process.Pid, exitStatus(err)
	var ee *exec.ExitError
	switch {
	case stopping:
		return
	case err == nil:
		f.log.Info("agent process exited as asked; not restarted", "process_kind", c.kind, "pid", pid, "status", status)
		return
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		f.log.Error("agent process refused its settings; not restarted (fix them and restart cks dev)",
			"process_kind", c.kind, "pid", pid, "status", status)
		return
	}
	crashes := c.crashes + 1
	if time.Since(c.started) >= devStableRun {
		crashes = 1 // it ran well before this crash: start the backoff over
	}
	wait := restartWait(crashes)
	f.log.Error("agent process exited unexpectedly; restarting it", "process_kind", c.kind, "pid", pid, "status", status,
		"in", wait.String(), "crashes_in_a_row", crashes)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.quit:
		return
	}
	n, err := f.startOne(c.devAgent, crashes)
	switch {
	case err != nil:
		f.log.Error("cannot restart the agent", "process_kind", c.kind, "err", err)
	case n != nil:
		f.log.Info("agent process restarted", "process_kind", c.kind, "pid", n.cmd.Process.Pid)
	}
}

// recordExit records child c, which has exited, as exited — its row read
// exited, its leases released (agents.ExitRecorder) — unless its own last
// write already says so (a graceful exit). Its row is the newest of this
// host with its pid, started after it.
func (f *devFleet) recordExit(c *devChild) {
	if f.rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := f.rows(ctx)
	if err != nil {
		f.log.Warn("cannot read the agents' liveness to record an exit", "process_kind", c.kind, "err", err)
		return
	}
	host, _ := os.Hostname()
	var row *cks.AgentLiveness
	for i, r := range rows {
		if r.Hostname == host && r.PID == c.cmd.Process.Pid && !r.StartedAt.Before(c.started.Add(-time.Second)) &&
			(row == nil || r.StartedAt.After(row.StartedAt)) {
			row = &rows[i]
		}
	}
	if row == nil || !row.ExitedAt.IsZero() {
		return // it never reported, or it said it exited
	}
	released, err := f.rec.RecordExit(ctx, *row, "cks dev")
	if err != nil {
		f.log.Warn("cannot record the agent as exited", "process_kind", c.kind, "instance_id", row.InstanceID, "err", err)
		return
	}
	ids := make([]int64, len(released))
	for i, t := range released {
		ids[i] = t.ID
	}
	f.log.Info("agent recorded as exited, its leases released", "process_kind", c.kind, "instance_id", row.InstanceID,
		"pid", c.cmd.Process.Pid, "released_tasks", fmt.Sprint(ids))
}

// waitReported waits until every running agent has written its first
// liveness row (as the hub reports it), so the banner comes once they are
// up; it gives up at timeout, when ctx ends, and for agents that exited.
func (f *devFleet) waitReported(ctx context.Context, c *client.Client, timeout time.Duration) {
	children := f.started()
	if len(children) == 0 {
		return
	}
	host, _ := os.Hostname()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := c.Processes(ctx, cks.ListProcessesInput{Alive: new(true), Limit: cks.MaxListLimit})
		if err == nil {
			up := map[int]bool{}
			for _, p := range list.Processes {
				if p.Hostname == host && p.Status == cks.ProcessAlive {
					up[p.PID] = true
				}
			}
			var waiting []string
			for _, ch := range children {
				select {
				case <-ch.done:
					continue // exited: logged by its waiter
				default:
				}
				if !up[ch.cmd.Process.Pid] {
					waiting = append(waiting, ch.kind)
				}
			}
			if len(waiting) == 0 {
				return
			}
			if time.Now().After(deadline) {
				f.log.Warn("agents have not reported liveness yet", "kinds", waiting, "waited", timeout.String())
				return
			}
		} else if time.Now().After(deadline) {
			f.log.Warn("cannot read agent liveness from the hub", "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (f *devFleet) started() []*devChild {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*devChild(nil), f.children...)
}

// stop sends SIGTERM to every running agent and waits up to timeout for
// them to drain and exit; then it sends a second SIGTERM, which makes an
// agent interrupt the task in hand and give it back (OPEN, its attempt not
// counted: a restart of cks dev burns no attempt), and waits up to
// devInterruptTimeout more before it kills the rest (a killed agent's
// tasks are released by recordExit, their attempts counted). A second
// SIGINT/SIGTERM to cks dev meanwhile is passed on at once.
func (f *devFleet) stop(timeout time.Duration) {
	f.mu.Lock()
	f.stopping = true
	children := append([]*devChild(nil), f.children...)
	f.mu.Unlock()
	close(f.quit)
	if len(children) == 0 {
		return
	}
	f.log.Info("stopping agents", "count", len(children), "timeout", timeout.String())
	signalAll := func(sig os.Signal) {
		for _, c := range children {
			c.cmd.Process.Signal(sig) //nolint:errcheck // already gone is fine
		}
	}
	signalAll(syscall.SIGTERM)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	interrupted := false
	interrupt := func() {
		if !interrupted {
			interrupted = true
			signalAll(syscall.SIGTERM)
			deadline.Reset(devInterruptTimeout)
		}
	}
	for _, c := range children {
	wait:
		for {
			select {
			case <-c.done:
				break wait
			case <-shutdown.Again():
				f.log.Warn("second signal: agents interrupt their tasks and give them back")
				interrupt()
			case <-deadline.C:
				if !interrupted {
					f.log.Warn("agents did not finish their tasks in time; interrupting them (given back, attempts not counted)",
						"timeout", timeout.String())
					interrupt()
					continue
				}
				f.log.Warn("agents did not stop in time; killing them", "timeout", devInterruptTimeout.String())
				signalAll(os.Kill)
			}
		}
		if ps := c.cmd.ProcessState; ps != nil && !ps.Success() {
			f.log.Warn("agent exited", "process_kind", c.kind, "pid", c.cmd.Process.Pid, "status", ps.String())
		}
	}
	f.log.Info("agents stopped")
}

// devLogFile is where the log of `cks dev` goes on in its data directory
// once its stderr is gone.
const devLogFile = "dev.log"

// logSink is the stderr of `cks dev`: it writes to w and, once a write to
// w fails (a closed pipe: the tee it fed was stopped), to file, saying so
// there first, for the rest of the run. A write never fails.
type logSink struct {
	mu   sync.Mutex
	w    io.Writer
	file string
	f    *os.File
	gone bool // w failed
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		_, err := l.w.Write(p)
		if err == nil {
			return len(p), nil
		}
		l.gone = true
		if err := os.MkdirAll(filepath.Dir(l.file), datadir.DirMode); err == nil {
			l.f, _ = os.OpenFile(l.file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, datadir.FileMode)
		}
		if l.f != nil {
			fmt.Fprintf(l.f, "cks dev: stderr is gone (%v): the log goes on here\n", err)
		}
	}
	if l.f != nil {
		l.f.Write(p) //nolint:errcheck // nowhere left to say so
	}
	return len(p), nil
}

// Close closes the file, if the log went there.
func (l *logSink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// exitStatus describes how a process ended.
func exitStatus(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// prefixWriter writes whole lines to w, each with prefix, under mu.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte // an incomplete last line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, p.prefix...)
		out = append(out, p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) > 0 {
		p.w.Write(out) //nolint:errcheck // a lost log line is not the child's problem
	}
	return len(b), nil
}

// flush writes an incomplete last line, if any.
func (p *prefixWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.w.Write(append(append([]byte(p.prefix), p.buf...), '\n')) //nolint:errcheck
		p.buf = nil
	}
}

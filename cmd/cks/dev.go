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
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/agents"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/datadir"
	"github.com/cks-dev/cks/hub"
)

// devAgentKinds are the seed agents `cks dev` starts.
var devAgentKinds = []string{"critic", "enrichment", "fork_resolution", "pipeline"}

// devAgentStopTimeout bounds how long `cks dev` waits for its agents to drain
// after SIGTERM before it kills them.
const devAgentStopTimeout = 10 * time.Second

// devAgentStartTimeout bounds how long `cks dev` waits for its agents' first
// heartbeats before it prints the banner anyway.
const devAgentStartTimeout = 15 * time.Second

// cmdDev runs a hub on the embedded SQLite default (or --database) and, once
// it serves, the four seed agents — and an exec agent when asked — as child
// processes of this binary against the same database. On SIGINT/SIGTERM it
// stops the agents (SIGTERM, a bounded wait, then SIGKILL) before the hub.
// It launches, it does not supervise: an agent that dies is logged, not
// restarted (ADR-016 §4).
func cmdDev(ctx context.Context, args []string, e env) error {
	d, err := parseDev(args, e)
	if err != nil {
		return err
	}
	dir, _ := d.sf.resolve(e)
	dbURL := or(d.sf.database, dir.DatabaseURL()) // dev uses the embedded default unless --database
	log := logger(e.stderr)
	cfg := hub.Config{
		DatabaseURL: dbURL,
		DataDir:     dir,
		Listen:      or(d.listen, e.getenv("CKS_LISTEN"), hub.DefaultListen),
		Version:     version,
		Logger:      log,
	}

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
	fleet := &devFleet{log: log, stderr: e.stderr}
	var startErr error
	if ctx.Err() == nil {
		startErr = fleet.start(specs)
	}
	if startErr == nil && ctx.Err() == nil {
		tok, _ := dir.ReadToken()
		fleet.waitReported(ctx, client.New(r.URL, tok), devAgentStartTimeout)
	}
	if startErr == nil && ctx.Err() == nil {
		printDevBanner(e.stdout, r, dir, fleet.started())
	}

	if startErr == nil {
		select {
		case <-ctx.Done():
		case err := <-hubDone:
			fleet.stop(devAgentStopTimeout)
			return err
		}
	}
	fleet.stop(devAgentStopTimeout)
	stopHub()
	if err := <-hubDone; err != nil {
		return err
	}
	return startErr
}

// devRun is what `cks dev` was asked to run.
type devRun struct {
	sf       storeFlags
	listen   string
	noAgents bool
	types    []string // the exec agent's task types
	command  []string // the exec agent's command, after --
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
	execTypes := fs.String("exec-types", "", "also start an exec agent (cks agent exec) for these comma-separated task types `T1,T2`, running the COMMAND after --")
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, fmt.Errorf("%w: dev takes no arguments (an exec agent's command goes after --), got %q", errUsage, pos)
	}
	d.types = agents.SplitTypes(*execTypes)
	switch {
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

// printDevBanner says where the hub is, which agents run and how to watch them.
func printDevBanner(w io.Writer, r hub.Ready, dir datadir.Dir, started []*devChild) {
	tok, _ := dir.ReadToken()
	cli := "go run ./cmd/cks"
	if dir != datadir.Default {
		cli = "cks" // the CLI needs --data-dir below, so show the plain form
	}
	dd := ""
	if dir != datadir.Default {
		dd = " --data-dir " + string(dir)
	}
	var agentsLine strings.Builder
	if len(started) == 0 {
		agentsLine.WriteString("none (--no-agents)")
	}
	for i, c := range started {
		if i > 0 {
			agentsLine.WriteString(", ")
		}
		fmt.Fprintf(&agentsLine, "%s (pid %d)", c.kind, c.cmd.Process.Pid)
	}
	fmt.Fprintf(w, `
cks dev is running on %s (%s).

  Studio:  %s/   (sign in with the admin token)
  Token:   %s   (also in %s)
  Agents:  %s
           their logs are on this stderr, each line prefixed with its kind
  CLI:     %s process list%s    (agent liveness; stop one with: process stop KIND)

Press Ctrl-C to stop (the agents first, then the hub).
`, r.URL, r.Backend, r.URL, tok, r.TokenFile, agentsLine.String(), cli, dd)
}

// devAgent is one agent process `cks dev` starts: its kind and its arguments
// to this binary.
type devAgent struct {
	kind string
	args []string
}

// devChild is a started agent process.
type devChild struct {
	kind string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process was reaped
}

// devFleet is the agents of one `cks dev`.
type devFleet struct {
	log    *slog.Logger
	stderr io.Writer
	outMu  sync.Mutex // serialises the prefixed lines of all children

	mu       sync.Mutex
	children []*devChild
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
	for _, s := range specs {
		cmd := exec.Command(self, s.args...)
		w := &prefixWriter{mu: &f.outMu, w: f.stderr, prefix: fmt.Sprintf("%-15s | ", s.kind)}
		cmd.Stdout, cmd.Stderr = w, w
		// Own process group: a Ctrl-C at the terminal reaches only cks dev,
		// which then stops each agent once (a second signal would make an
		// agent skip its drain).
		cmd.SysProcAttr = devSysProcAttr()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("dev: start agent %s: %w", s.kind, err)
		}
		c := &devChild{kind: s.kind, cmd: cmd, done: make(chan struct{})}
		f.mu.Lock()
		f.children = append(f.children, c)
		f.mu.Unlock()
		go func() {
			err := cmd.Wait()
			w.flush()
			f.mu.Lock()
			stopping := f.stopping
			f.mu.Unlock()
			close(c.done)
			if !stopping {
				f.log.Error("agent process exited unexpectedly; not restarted (cks dev does not supervise)",
					"process_kind", c.kind, "pid", cmd.Process.Pid, "status", exitStatus(err))
			}
		}()
	}
	return nil
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
		ps, err := c.ListProcesses(ctx)
		if err == nil {
			up := map[int]bool{}
			for _, p := range ps {
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

// stop sends SIGTERM to every running agent, waits up to timeout for them to
// drain and exit, then kills the rest. A second SIGINT/SIGTERM to cks dev
// meanwhile is passed on, which makes the agents exit at once.
func (f *devFleet) stop(timeout time.Duration) {
	f.mu.Lock()
	f.stopping = true
	children := append([]*devChild(nil), f.children...)
	f.mu.Unlock()
	if len(children) == 0 {
		return
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	f.log.Info("stopping agents", "count", len(children), "timeout", timeout.String())
	for _, c := range children {
		c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // already gone is fine
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, c := range children {
	wait:
		for {
			select {
			case <-c.done:
				break wait
			case <-again:
				f.log.Warn("second signal: agents exit without finishing their tasks")
				for _, c := range children {
					c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
				}
			case <-deadline.C:
				f.log.Warn("agents did not stop in time; killing them", "timeout", timeout.String())
				for _, c := range children {
					c.cmd.Process.Kill() //nolint:errcheck
				}
			}
		}
		if ps := c.cmd.ProcessState; ps != nil && !ps.Success() {
			f.log.Warn("agent exited", "process_kind", c.kind, "pid", c.cmd.Process.Pid, "status", ps.String())
		}
	}
	f.log.Info("agents stopped")
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

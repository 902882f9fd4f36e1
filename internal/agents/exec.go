package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// Exec defaults.
const (
	// DefaultMaxOutput is how much of a command's stdout is kept (as the
	// task's result and as evidence); the rest is cut, and the cut is said.
	DefaultMaxOutput = 64 << 10
	// DefaultKillGrace is how long an aborted command's process group has
	// between SIGTERM and SIGKILL.
	DefaultKillGrace = 5 * time.Second
	// stderrTail is how much of stderr a failure reports.
	stderrTail = 4 << 10
)

// ExecConfig configures the resolver of the exec agent kind.
type ExecConfig struct {
	// Command is the program and its arguments, run once per task.
	Command []string
	// MaxOutput bounds the stdout kept; DefaultMaxOutput when 0.
	MaxOutput int
	// KillGrace is the SIGTERM → SIGKILL wait on abort; DefaultKillGrace when 0.
	KillGrace time.Duration
	// Logger receives what is wrong with the command's reports; nil is
	// slog.Default().
	Logger *slog.Logger
	// OutputFlush is how often the command's output is sent to the
	// attempt's live output while it runs; DefaultOutputFlush when 0.
	OutputFlush time.Duration
}

// Exec returns the resolver of `cks agent exec`: it runs cfg.Command for
// the task with the task as JSON on stdin (without its lease token) and
// CKS_TASK_ID, CKS_TASK_TYPE, CKS_TASK_ATTEMPT, CKS_TASK_RESTART and
// CKS_TASK_REVISION in its environment, and TRACEPARENT when the claim
// handed the attempt a trace context. While it runs, its stdout and stderr
// go to the attempt's live output as they come (outputStream: sent every
// OutputFlush, never blocking the command); what it writes on its reports
// pipe (fd 3, CKS_REPORT_FD) is reported for the attempt (readReports).
// Exit status 0 completes the task with
// stdout (capped) as its result and as evidence "stdout"; any other status
// fails the attempt, retryably, with the tail of stderr. The command runs in
// a process group of its own; when the attempt is aborted (stop, update,
// cancel) the group gets SIGTERM, then everything the command started gets
// SIGKILL after the grace period, and the resolver returns only once none of
// it is left, so the abort is confirmed truthfully. When the command exits,
// whatever it left running is killed the same way.
//
// On Linux the command runs under an exec guard, this program started again
// (see RunExecGuard), which outlives the agent: if the agent dies, even by
// SIGKILL, the guard kills the command and everything it started, so a task
// reclaimed from a dead agent never runs beside its orphan. A program that
// uses Exec must call RunExecGuard first thing in main.
func Exec(cfg ExecConfig) worker.Resolver {
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		if len(cfg.Command) == 0 {
			return worker.Result{}, worker.Permanent(errors.New("exec agent: no command"))
		}
		t := a.Task() // a read view: the lease token is not part of it
		input, err := json.Marshal(t)
		if err != nil {
			return worker.Result{}, err
		}
		stdout, stderr := &capped{max: cfg.MaxOutput}, &capped{max: stderrTail, tail: true}
		reportsR, reportsW, err := os.Pipe()
		if err != nil {
			return worker.Result{}, fmt.Errorf("exec agent: %w", err)
		}
		live := newOutputStream(func(ctx context.Context, stream, text string) error {
			_, err := a.Output(ctx, stream, text)
			return err
		}, cfg.OutputFlush, DefaultOutputBuffer)
		run := commandRun{stdin: input, stdout: io.MultiWriter(stdout, live.writer("stdout")),
			stderr: io.MultiWriter(stderr, live.writer("stderr")), reports: reportsW, env: append(os.Environ(),
				"CKS_TASK_ID="+strconv.FormatInt(t.ID, 10),
				"CKS_TASK_TYPE="+t.Type,
				"CKS_TASK_ATTEMPT="+strconv.Itoa(t.Attempts),
				"CKS_TASK_RESTART="+strconv.Itoa(t.Restarts),
				"CKS_TASK_REVISION="+strconv.Itoa(t.Revision),
				reportFDEnv+"=3")}
		if tp := a.Traceparent(); tp != "" {
			// The W3C trace context of the attempt, by the name the
			// OpenTelemetry SDKs' environment propagation reads, so the
			// command's own spans nest under the attempt (docs/tracing.md).
			run.env = append(run.env, "TRACEPARENT="+tp)
		}
		read := make(chan struct{})
		go func() {
			defer close(read)
			readReports(ctx, a, reportsR, cfg.Logger)
		}()
		ended, err := runCommand(ctx, cfg, run)
		live.close() // all of it sent before the attempt ends
		reportsW.Close()
		// Every writer of the pipe is gone with the command (the guard
		// reaps everything it started): its last lines are read to EOF.
		<-read
		reportsR.Close()
		switch {
		case err != nil:
			return worker.Result{}, err
		case ended.killed:
			return worker.Result{}, fmt.Errorf("exec agent: command killed: %w", context.Cause(ctx))
		case ended.status != "":
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = "(no stderr)"
			}
			if _, err := a.Evidence(ctx, "stderr", stderr.String()); err != nil {
				return worker.Result{}, err
			}
			return worker.Result{}, fmt.Errorf("command %s: %s", ended.status, msg)
		}
		out := stdout.String()
		if _, err := a.Evidence(ctx, "stdout", out); err != nil {
			return worker.Result{}, err
		}
		return worker.Result{Output: out}, nil
	}
}

// reportFDEnv names the command's descriptor of the reports pipe: one
// JSON object a line, such as
//
//	{"usage":{"model":"gpt-5","input_tokens":1200,"output_tokens":300,"cost":"0.0125"}}
//
// which the agent reports for the attempt (report_usage) as it reads it:
// a command says what it spends without credentials of its own
// (docs/spend.md#exec-agents).
const reportFDEnv = "CKS_REPORT_FD"

// maxReportLine bounds one line of the reports pipe.
const maxReportLine = 64 << 10

// reportLine is one line of the reports pipe.
type reportLine struct {
	Usage *struct {
		Model        string `json:"model"`
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
		Cost         string `json:"cost"`
	} `json:"usage"`
}

// parseReport reads one line of the reports pipe; an error says what is
// wrong with it.
func parseReport(line []byte) (cks.UsageInput, error) {
	var r reportLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return cks.UsageInput{}, fmt.Errorf("expected one JSON object such as {\"usage\":{\"input_tokens\":10}}: %w", err)
	}
	if r.Usage == nil {
		return cks.UsageInput{}, errors.New("expected a \"usage\" object")
	}
	u := cks.UsageInput{Model: r.Usage.Model, InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
	if r.Usage.Cost != "" {
		c, err := cks.ParseCost("cost", r.Usage.Cost)
		if err != nil {
			return u, err
		}
		u.Cost = c
	}
	return u, nil
}

// readReports reports each line the command writes on the reports pipe
// for attempt a until EOF. A line that is not a report, or that the hub
// refuses, is logged and skipped: the command's work goes on. A report
// that uses the task's budget up aborts the attempt (Attempt.ReportUsage).
func readReports(ctx context.Context, a *worker.Attempt, r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxReportLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		u, err := parseReport(line)
		if err == nil {
			_, err = a.ReportUsage(ctx, u)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("exec agent: a report of the command was not recorded", "task_id", a.Task().ID,
				"line", cks.TextFor("line", string(line)), "err", err)
		}
	}
	if err := sc.Err(); err != nil {
		log.Warn("exec agent: the command's reports pipe", "task_id", a.Task().ID, "err", err)
		io.Copy(io.Discard, r) //nolint:errcheck // drained so the command never blocks on a full pipe
	}
}

// Check refuses a command that cannot be started — its program not found
// (a path is taken from the working directory, a bare name looked up on
// $PATH) or not executable — so that an exec agent refuses to start
// instead of failing every task it claims on it.
func (cfg ExecConfig) Check() error {
	if len(cfg.Command) == 0 {
		return errors.New("exec agent: no command")
	}
	name := cfg.Command[0]
	_, err := exec.LookPath(name)
	if err == nil {
		return nil
	}
	if ee, ok := errors.AsType[*exec.Error](err); ok {
		err = ee.Err
	}
	where := "looked up on $PATH"
	if strings.ContainsRune(name, os.PathSeparator) {
		wd, _ := os.Getwd()
		where = "a path taken from the working directory " + wd
	}
	return fmt.Errorf("exec agent: command %q cannot be run (%s): %w", name, where, err)
}

// commandRun is what one run of the command reads and where its output goes.
type commandRun struct {
	stdin          []byte
	stdout, stderr io.Writer
	env            []string
	// reports is the write end of the reports pipe, the command's fd 3
	// (CKS_REPORT_FD); nil for none.
	reports *os.File
}

// commandEnd is how a run of the command ended, once nothing of it is left.
type commandEnd struct {
	// killed: ctx ended first, and the command was killed.
	killed bool
	// status is the command's failure, as os/exec words it ("exit status 3",
	// "signal: killed"); empty after exit status 0.
	status string
}

// startError is the error of a command that could not be started.
func startError(cfg ExecConfig, reason string) error {
	return fmt.Errorf("exec agent: start %q: %s", cfg.Command[0], reason)
}

// killGroup signals every process of group pgid; a group already gone is fine.
func killGroup(pgid int, sig syscall.Signal) {
	syscall.Kill(-pgid, sig) //nolint:errcheck // ESRCH: nothing left to signal
}

// capped keeps at most max bytes of what is written: the head, or with tail
// the end. It notes how much it dropped.
type capped struct {
	buf     []byte
	max     int
	tail    bool
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	if over := len(c.buf) - c.max; over > 0 {
		c.dropped += over
		if c.tail {
			c.buf = append(c.buf[:0], c.buf[over:]...)
		} else {
			c.buf = c.buf[:c.max]
		}
	}
	return len(p), nil
}

// String returns what was kept as text the store takes (cks.ToText): a
// command may print binary, and the cut may split a UTF-8 sequence.
func (c *capped) String() string {
	switch {
	case c.dropped == 0:
		return cks.ToText(string(c.buf))
	case c.tail:
		return cks.ToText(fmt.Sprintf("[%d bytes cut]\n%s", c.dropped, c.buf))
	}
	return cks.ToText(fmt.Sprintf("%s\n[%d more bytes cut]", c.buf, c.dropped))
}

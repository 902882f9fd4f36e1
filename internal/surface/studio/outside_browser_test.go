package studio_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
)

// The environment of the agent process runOutsideAgent runs: the database,
// the task type it claims, and the gate file its command waits for before
// it finishes the task.
const (
	outsideDatabaseEnv = "CKS_STUDIO_TEST_OUTSIDE_DATABASE"
	outsideTypeEnv     = "CKS_STUDIO_TEST_OUTSIDE_TYPE"
	outsideGateEnv     = "CKS_STUDIO_TEST_OUTSIDE_GATE"
)

// runOutsideAgent makes this process an exec agent outside the hub — a
// process of its own on the hub's database, as `cks agent exec` is — when
// the test started it as one (outsideDatabaseEnv set), and exits when it
// is sent SIGTERM; in any other process it returns at once. The agent
// claims tasks of outsideTypeEnv; its command, run once per task, holds
// the task RUNNING until the gate file exists, then completes it.
func runOutsideAgent() {
	url := os.Getenv(outsideDatabaseEnv)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := backend.Open(ctx, url)
	if err != nil {
		log.Error("outside agent: open", "err", err)
		os.Exit(1)
	}
	resolve := agents.Exec(agents.ExecConfig{KillGrace: time.Second, Command: []string{"sh", "-c",
		`cat > /dev/null; while [ ! -e "$` + outsideGateEnv + `" ]; do sleep 0.02; done; echo done`}})
	err = agents.Run(ctx, agents.ServicesOf(b), agents.Settings{Kind: "exec", Types: []string{os.Getenv(outsideTypeEnv)},
		LivenessInterval: time.Second, PollInterval: 200 * time.Millisecond, HeartbeatInterval: 5 * time.Second,
		Lease: time.Minute, StaleWindow: time.Minute}, resolve, agents.Options{Logger: log})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil && ctx.Err() == nil {
		log.Error("outside agent", "err", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startOutsideAgent starts the agent process of runOutsideAgent on h's
// database for tasks of typ, its command gated by the file gate; it is
// stopped (the gate opened, SIGTERM, then waited for) when the test ends.
func startOutsideAgent(t testing.TB, h consoleHub, typ, gate string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), outsideDatabaseEnv+"="+h.Database, outsideTypeEnv+"="+typ, outsideGateEnv+"="+gate)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		// A failed test may leave the task running: open the gate, so
		// the agent finishes it and exits.
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Error(err)
		}
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("outside agent: %v; its output:\n%s", err, out.String())
			}
		case <-time.After(browserWait):
			cmd.Process.Kill() //nolint:errcheck // it may have exited meanwhile
			<-done
			t.Errorf("the outside agent did not exit within %s of SIGTERM; its output:\n%s", browserWait, out.String())
		}
	})
}

// TestBrowserBoardFollowsOutsideAgent: on both backends, an exec agent
// running as a process of its own on the hub's database (not through the
// hub) claims a task and completes it, and the open board — filtered by the
// task's type, so the finished row stays listed — shows its row RUNNING and
// then COMPLETED and its chips' counts change, without a reload. Those
// moves publish neither tasks_ready nor task_aborts: only
// cks.TopicTasksMoved, which the agent's process publishes and the hub
// turns into its "tasks" event, can tell the board; its fallback poll is
// made an hour long, so the test fails without the topic.
func TestBrowserBoardFollowsOutsideAgent(t *testing.T) {
	t.Parallel()
	browserBackends(t, func(t *testing.T, backendName string) {
		h := startHub(t, backendName, nil)
		typ := "outside-" + backendName
		task := h.createTask(t, cks.NewTask{Type: typ, Title: "Worked outside the hub"})

		tb := newTab(t, 0)
		tb.onEveryPage(`window.cksPollMs = 3600000`)
		tb.signIn(h, h.Token)
		tb.do(chromedp.Navigate(h.URL+"/tasks?type="+typ), waitVisible(chromedp.ID("list-heading")))
		tb.waitTrue("the live indicator reads live", `document.getElementById("live").textContent === "live"`)
		js[bool](tb, `window.cksNoReload = true`)
		if !js[bool](tb, `window.cksPollMs === 3600000`) {
			t.Fatal("the page's fallback poll was not made long")
		}
		cell := fmt.Sprintf(`document.querySelector('[data-task-row="%d"]')`, task.ID)
		chip := func(state, n string) string {
			return fmt.Sprintf(`[...document.querySelectorAll(".chip--%s .chip__n")].some(e => e.textContent === %q)`,
				strings.ToLower(state), n)
		}
		tb.waitTrue("the row OPEN", cell+` && `+cell+`.dataset.state === "OPEN"`)

		gate := filepath.Join(t.TempDir(), "gate")
		startOutsideAgent(t, h, typ, gate)
		h.waitTask(t, task.ID, "RUNNING", func(t cks.Task) bool { return t.State == cks.TaskRunning })
		tb.waitTrue("the row RUNNING", cell+` && `+cell+`.dataset.state === "RUNNING"`)
		tb.waitTrue("the RUNNING chip counts 1, the OPEN chip 0", chip("RUNNING", "1")+` && `+chip("OPEN", "0"))

		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h.waitTask(t, task.ID, "COMPLETED", func(t cks.Task) bool { return t.State == cks.TaskCompleted })
		tb.waitTrue("the row COMPLETED", cell+` && `+cell+`.dataset.state === "COMPLETED"`)
		tb.waitTrue("the COMPLETED chip counts 1, the RUNNING chip 0", chip("COMPLETED", "1")+` && `+chip("RUNNING", "0"))
		if !js[bool](tb, `window.cksNoReload === true`) {
			t.Error("the board reloaded; it should follow the agent's moves live")
		}
	})
}

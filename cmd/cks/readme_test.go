package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/base/datadir"
)

// readmeNotRun are the README's example commands that TestREADMEExamples
// does not run, by how they begin, and why.
var readmeNotRun = map[string]string{
	"scripts/test": "the test suite itself",
	"go install ":  "installs the binary; the test runs the one it built, as cks on PATH",
	"go test ":     "a fuzz run of its own",
	"go run ./cmd/cks serve --database 'postgres://USER": "a placeholder connection string",
}

// readmeCommands are the command lines of the README's sh code blocks, in
// order: comments and blank lines left out, continued lines joined.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in, cont := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = line == "```sh"
			continue
		case !in:
			continue
		}
		line = cont + strings.TrimSpace(line)
		if cut, ok := strings.CutSuffix(line, `\`); ok {
			cont = cut
			continue
		}
		cont = ""
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestREADMEExamples runs the README's example commands as written, in a
// temporary directory holding the repository's examples/, against a real
// hub: the last `cks dev` line (every other is a prefix of it) is the hub,
// on a free port instead of 7433, and every other cks (`go run ./cmd/cks`)
// or curl line runs through sh against it, with `cks` on PATH as the
// binary under test, and must exit 0 (curl failing on an error answer). A
// line that is neither run nor listed in readmeNotRun fails the test. The
// tasks the lines made must be worked (COMPLETED) by the agents of that
// cks dev, and its exec agent works one more with the example script.
func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cks dev and its agents")
	}
	var dev string
	var lines []string
	used := map[string]bool{}
	for _, line := range readmeCommands(t) {
		cmdline := line
		if rest, ok := strings.CutPrefix(line, "go run ./cmd/cks"); ok {
			cmdline = "cks" + rest
		}
		skipped := false
		for prefix, why := range readmeNotRun {
			if strings.HasPrefix(line, prefix) {
				t.Logf("not run (%s): %s", why, line)
				skipped, used[prefix] = true, true
			}
		}
		switch {
		case skipped:
		case cmdline == "cks dev" || strings.HasPrefix(cmdline, "cks dev "):
			if dev != "" && !strings.HasPrefix(cmdline, dev) && !strings.HasPrefix(dev, cmdline) {
				t.Errorf("README's cks dev lines differ beyond a prefix: %q and %q", dev, cmdline)
			}
			if len(cmdline) > len(dev) {
				dev = cmdline
			}
		case strings.HasPrefix(cmdline, "cks ") || strings.HasPrefix(cmdline, "curl "):
			lines = append(lines, cmdline)
		default:
			t.Errorf("README example %q is neither run by this test nor listed in readmeNotRun", line)
		}
	}
	for prefix := range readmeNotRun {
		if !used[prefix] {
			t.Errorf("readmeNotRun lists %q, which begins no README example any more", prefix)
		}
	}
	if dev == "" || len(lines) == 0 {
		t.Fatalf("no cks dev line (%q) or no commands (%d) in README's sh blocks", dev, len(lines))
	}
	wd, bin := readmeDir(t)
	h := startREADMEHub(t, wd, bin, dev)
	for _, line := range lines {
		line = strings.ReplaceAll(line, "http://127.0.0.1:7433", h.url)
		if rest, ok := strings.CutPrefix(line, "curl "); ok {
			line = "curl --fail --silent --show-error " + rest // an error answer fails the line
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir, cmd.Env = wd, readmeEnv(bin)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README example %q: %v\n%s", line, err, out)
		}
		t.Logf("ran: %s", line)
	}
	// Every task the examples made is worked by an agent of that cks dev
	// (a type no agent claims would stay OPEN forever).
	api := client.New(h.url, h.token)
	var left []string
	if !poll(30*time.Second, func() bool {
		page, err := api.ListTasks(context.Background(), cks.TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		left = nil
		for _, task := range page.Tasks {
			if task.State != cks.TaskCompleted {
				left = append(left, fmt.Sprintf("task %d of type %s is %s", task.ID, task.Type, task.State))
			}
		}
		return len(page.Tasks) > 0 && len(left) == 0
	}) {
		t.Fatalf("the README's tasks are not worked by the agents of %q: %v", dev, left)
	}
	// The exec agent of the README's cks dev line runs the example script.
	id := newTask(t, api, "lint", "from the README test")
	if task := waitState(t, api, id, cks.TaskCompleted); !strings.HasPrefix(task.Result, fmt.Sprintf("lint task %d done", id)) {
		t.Errorf("the example agent's result: %q", task.Result)
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-h.done; err != nil {
		t.Errorf("cks dev of the README: %v\n%s", err, h.stderr.String())
	}
	h.done <- nil // for the cleanup
}

// readmeDir is a working directory for the README's commands — with the
// repository's examples/ in it, where its lines name them — and a
// directory holding `cks`, the binary under test.
func readmeDir(t *testing.T) (wd, bin string) {
	t.Helper()
	wd, bin = t.TempDir(), t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(wd, "examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cksBin, filepath.Join(bin, "cks")); err != nil {
		t.Fatal(err)
	}
	return wd, bin
}

// readmeEnv is the environment of a README command: no CKS_* variable,
// and bin first on PATH.
func readmeEnv(bin string) []string {
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// startREADMEHub starts the README's cks dev line in wd, on a free port,
// and waits for it to serve.
func startREADMEHub(t *testing.T, wd, bin, dev string) *hubProc {
	t.Helper()
	args := strings.Fields(dev)[1:] // its arguments have no quotes
	cmd := exec.Command(cksBin, append([]string{args[0], "--listen", "127.0.0.1:0"}, args[1:]...)...)
	cmd.Dir, cmd.Env = wd, readmeEnv(bin)
	dir := datadir.Dir(filepath.Join(wd, datadir.Default))
	h := &hubProc{cmd: cmd, dir: dir, stderr: &syncBuffer{}, done: make(chan error, 1), gone: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.stderr, h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		close(h.gone)
		h.done <- err
	}()
	t.Cleanup(h.kill)
	waitFor(t, "the README's cks dev to serve", func() bool {
		select {
		case <-h.gone:
			t.Fatalf("the README's %q exited:\n%s", dev, h.stderr.String())
		default:
		}
		return strings.Contains(h.stderr.String(), "Press Ctrl-C")
	})
	h.url, _ = dir.ReadURL()
	h.token, _ = dir.ReadToken()
	return h
}

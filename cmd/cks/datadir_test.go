package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/base/datadir"
)

// TestOneHubPerDataDirectory: a second `cks serve` on a data directory a
// running hub serves from exits 1 at once, naming that hub's URL, and leaves
// its hub.url alone (two hubs used to overwrite each other's). Agents that
// open the directory's SQLite file directly, as `cks dev` starts them, are
// no hubs and keep working beside it; and once the hub is killed (kill -9,
// no clean-up), a new hub starts on the directory.
func TestOneHubPerDataDirectory(t *testing.T) {
	h := startHub(t, "serve")
	res := runCKS(t, nil, "serve", "--listen", "127.0.0.1:0", "--data-dir", string(h.dir))
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	last := lines[len(lines)-1]
	if res.code != 1 || !strings.Contains(last, h.url) || !strings.Contains(last, "one hub per data directory") {
		t.Fatalf("second hub on %s: exit %d, last line %q; want exit 1 naming %s\n%s", h.dir, res.code, last, h.url, res.stderr)
	}
	if u, err := h.dir.ReadURL(); err != nil || u != h.url {
		t.Fatalf("hub.url = %q (%v) after the refused hub, want the first hub's %s", u, err, h.url)
	}

	api := client.New(h.url, h.token)
	id := newTask(t, api, "echo", "beside the hub")
	startAgent(t, nil, append([]string{"exec", "--data-dir", string(h.dir), "--types", "echo"}, append(fastAgent, "--", "true")...)...)
	waitState(t, api, id, cks.TaskCompleted)

	h.cmd.Process.Kill()
	<-h.done
	h.done <- nil // for startHub's cleanup
	res = runCKS(t, nil, "serve", "--listen", "nonsense", "--data-dir", string(h.dir))
	if strings.Contains(res.stderr, "one hub per data directory") {
		t.Fatalf("the killed hub's lock outlived it:\n%s", res.stderr)
	}
	again := startHubIn(t, "serve", h.dir)
	if again.url == h.url {
		t.Fatalf("the new hub reports the killed hub's URL %s", h.url)
	}
}

// TestDataDirFoundAbove: the CLI run in a subdirectory of the one holding
// .cks finds it, as git finds .git: the hub's URL and token, and (for a
// command that opens the store) its database; --url alone takes the
// directory's token for the directory's hub and no other; --data-dir and
// CKS_DATA_DIR still win, and with no .cks above, the answer names ./.cks.
func TestDataDirFoundAbove(t *testing.T) {
	root := t.TempDir()
	h := startHubIn(t, "serve", datadir.Dir(filepath.Join(root, ".cks")))
	sub := filepath.Join(root, "src", "deep")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	api := client.New(h.url, h.token)
	id := newTask(t, api, "found", "from below")
	if r := runCKSIn(t, sub, nil, "task", "show", itoa(id)); r.code != 0 || !strings.Contains(r.stdout, "from below") {
		t.Fatalf("task show from %s: exit %d\n%s%s", sub, r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(sub, ".cks")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the CLI made a data directory in %s: %v", sub, err)
	}
	// --url alone: the data directory's token for its own hub only.
	if r := runCKSIn(t, sub, nil, "task", "show", itoa(id), "--url", h.url); r.code != 0 {
		t.Fatalf("task show --url (the data directory's hub): exit %d %s", r.code, r.stderr)
	}
	if r := runCKSIn(t, sub, nil, "--url", "http://127.0.0.1:1", "task", "show", itoa(id)); r.code != 1 ||
		!strings.Contains(r.stderr, "no token for the hub at http://127.0.0.1:1: pass --token or set CKS_TOKEN") ||
		strings.Contains(r.stderr, h.token) {
		t.Fatalf("task show --url (another hub) without a token: exit %d %s", r.code, r.stderr)
	}
	elsewhere := t.TempDir()
	for _, r := range []result{
		runCKSIn(t, sub, nil, "task", "show", itoa(id), "--data-dir", elsewhere),
		runCKSIn(t, sub, []string{"CKS_DATA_DIR=" + elsewhere}, "task", "show", itoa(id)),
	} {
		if r.code != 1 || !strings.Contains(r.stderr, "no hub URL") || !strings.Contains(r.stderr, elsewhere) {
			t.Errorf("a named data directory does not win over the one above: exit %d %s", r.code, r.stderr)
		}
	}
	if r := runCKSIn(t, elsewhere, nil, "task", "show", itoa(id)); r.code != 1 || !strings.Contains(r.stderr, filepath.Join(".cks", "hub.url")) {
		t.Errorf("with no .cks above: exit %d %s, want the error naming ./.cks", r.code, r.stderr)
	}
	// A command that opens the store finds its database the same way.
	a := startAgentIn(t, sub, "exec", "--types", "found-exec", "--poll-interval", "50ms", "--", "true")
	id = newTask(t, api, "found-exec", "worked from below")
	waitState(t, api, id, cks.TaskCompleted)
	a.kill()
}

package main

import (
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
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

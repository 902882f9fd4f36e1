package hub_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/hub"
)

// lockedBuffer is a log sink safe for the hub's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDataDirectoryIsOwnerOnly: a hub on a new data directory creates it
// 0700 and every file in it 0600 — the database (task payloads) with its WAL
// and shared-memory files, the admin token and hub.url.
func TestDataDirectoryIsOwnerOnly(t *testing.T) {
	dir := datadir.Dir(filepath.Join(t.TempDir(), "new", ".cks"))
	h := runHub(t, hub.Config{DataDir: dir})
	h.call(t, "POST", "/v1/tasks", `{"type":"t","title":"x"}`, nil) // the WAL holds it
	db := filepath.Join(string(dir), "cks.db")
	for p, want := range map[string]os.FileMode{string(dir): 0o700, db: 0o600, db + "-wal": 0o600, db + "-shm": 0o600,
		dir.TokenFile(): 0o600, dir.URLFile(): 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

// TestLooseDataDirectoryIsWarnedAbout: a hub on an existing directory that
// others may read warns, naming it, and leaves its mode alone.
func TestLooseDataDirectoryIsWarnedAbout(t *testing.T) {
	dir := datadir.Dir(filepath.Join(t.TempDir(), "shared"))
	if err := os.Mkdir(string(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(string(dir), 0o755) // whatever the umask
	var log lockedBuffer
	runHub(t, hub.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if out := log.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "path="+string(dir)) || !strings.Contains(out, "mode=-rwxr-xr-x") {
		t.Fatalf("hub log lacks a warning naming %s and its mode:\n%s", dir, out)
	}
	if st, _ := os.Stat(string(dir)); st.Mode().Perm() != 0o755 {
		t.Fatalf("the hub changed the directory's mode to %v", st.Mode().Perm())
	}
}

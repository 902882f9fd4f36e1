package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/surface/api"
)

// serveOnce runs a hub on cfg until it is ready, then stops it; it returns
// what hub.Run returned and whether the hub became ready.
func serveOnce(t testing.TB, cfg hub.Config) (bool, error) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ready := false
	err := hub.Run(ctx, cfg, func(hub.Ready) { ready = true; cancel() })
	return ready, err
}

// TestRefusesReadOnlyDatabase: a hub whose database refuses writes does not
// start (it would answer every write with an error while /healthz said
// ok): hub.Run fails with ErrStorageReadOnly, saying why, and the data
// directory is left as it was. The SQLite file is one an earlier hub made,
// with its admin token, so nothing but the probe would notice.
func TestRefusesReadOnlyDatabase(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := datadir.Dir(t.TempDir())
		if ready, err := serveOnce(t, hub.Config{DataDir: dir}); !ready || err != nil {
			t.Fatalf("first start: ready=%v %v", ready, err)
		}
		backendtest.ReadOnlyFile(t, filepath.Join(string(dir), "cks.db"))
		ready, err := serveOnce(t, hub.Config{DataDir: dir})
		if ready || !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), "cks.db is read-only") {
			t.Fatalf("start on a read-only cks.db: ready=%v %v, want a read-only error naming the file", ready, err)
		}
		if _, err := dir.ReadURL(); err == nil {
			t.Fatal("the refused hub wrote hub.url")
		}
	})
	t.Run("postgres", func(t *testing.T) {
		u := backendtest.PostgresURL(t)
		if ready, err := serveOnce(t, hub.Config{DataDir: datadir.Dir(t.TempDir()), DatabaseURL: u}); !ready || err != nil {
			t.Fatalf("first start: ready=%v %v", ready, err)
		}
		ready, err := serveOnce(t, hub.Config{DataDir: datadir.Dir(t.TempDir()), DatabaseURL: u + "&default_transaction_read_only=on"})
		if ready || !errors.Is(err, cks.ErrStorageReadOnly) || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("start on a read-only Postgres: ready=%v %v, want a read-only error", ready, err)
		}
	})
}

// TestFullDiskIs503: a hub whose data directory is a small file system
// that fills up answers the write that does not fit 503 storage_full
// (nothing written), and /healthz then says degraded, storage full. It
// needs to mount a tmpfs (root with CAP_SYS_ADMIN) and is skipped without.
func TestFullDiskIs503(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	h := runHub(t, hub.Config{DataDir: datadir.Dir(mnt)})
	payload, _ := json.Marshal(map[string]string{"filler": strings.Repeat("x", 100<<10)})
	body := fmt.Sprintf(`{"type":"t","title":"filler","payload":%s}`, payload)
	var created int
	var e api.ErrorBody
	for ; created < 100; created++ {
		e = api.ErrorBody{}
		if st := h.call(t, "POST", "/v1/tasks", body, &e); st != http.StatusCreated {
			if st != http.StatusServiceUnavailable || e.Error.Code != "storage_full" {
				t.Fatalf("write %d on a full disk: %d %+v, want 503 storage_full", created+1, st, e)
			}
			break
		}
	}
	if created == 100 {
		t.Fatal("100 writes of 100 KiB fitted into 2 MiB")
	}
	var page struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if st := h.call(t, "GET", "/v1/tasks?limit=1000", "", &page); st != http.StatusOK || len(page.Tasks) != created {
		t.Fatalf("tasks after the full disk: %d, %d listed, want %d", st, len(page.Tasks), created)
	}
	var health api.Health
	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&health); resp.StatusCode != http.StatusServiceUnavailable || health.Storage != "full" {
		t.Fatalf("/healthz after a full disk: %d %+v, want 503 storage full", resp.StatusCode, health)
	}
}

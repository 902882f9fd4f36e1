package hub_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/surface/api"
)

// hubDatabases make a fresh database of each backend for the hubs of a
// test, by backend name.
var hubDatabases = map[string]func(t *testing.T) string{
	"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "shared.db") },
	"postgres": func(t *testing.T) string { return backendtest.PostgresURL(t) },
}

// TestHealthzNamesTheLeader: two hubs serving one database agree on the
// maintenance leader in /healthz, and only the first started says it is it.
func TestHealthzNamesTheLeader(t *testing.T) {
	for name, db := range hubDatabases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := db(t)
			first := runHub(t, hub.Config{DatabaseURL: url})
			second := runHub(t, hub.Config{DatabaseURL: url})
			a, b := healthOf(t, first), healthOf(t, second)
			if a.Leader == nil || b.Leader == nil || a.Leader.ID != b.Leader.ID {
				t.Fatalf("leaders in /healthz: %+v and %+v; want one, the same", a.Leader, b.Leader)
			}
			if !a.Leader.ThisHub || b.Leader.ThisHub {
				t.Fatalf("this_hub: first %v, second %v; want the first hub alone", a.Leader.ThisHub, b.Leader.ThisHub)
			}
		})
	}
}

func healthOf(t testing.TB, h testHub) api.Health {
	t.Helper()
	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health api.Health
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d %v", resp.StatusCode, err)
	}
	return health
}

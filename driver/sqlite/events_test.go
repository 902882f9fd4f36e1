package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/backend/backendtest"
)

// TestEventsHaveTheirTasks: without a foreign key, every event still has
// its task (backendtest.EventsHaveTheirTasks), counted in the file itself.
func TestEventsHaveTheirTasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cks.db")
	backendtest.EventsHaveTheirTasks(t, open(t, path), func(t testing.TB) int {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM cks_task_events e
			WHERE NOT EXISTS (SELECT 1 FROM cks_outbox_tasks t WHERE t.task_id = e.task_id)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

package postgres_test

import (
	"testing"

	"github.com/cks-dev/cks/backend/backendtest"
)

// TestEventsHaveTheirTasks: without a foreign key, every event still has
// its task (backendtest.EventsHaveTheirTasks), counted in the schema itself.
func TestEventsHaveTheirTasks(t *testing.T) {
	url := backendtest.PostgresURL(t)
	backendtest.EventsHaveTheirTasks(t, open(t, url), func(t testing.TB) int {
		var n int
		err := conn(t, url).QueryRow(testCtx(t), `SELECT count(*) FROM cks_task_events e
			WHERE NOT EXISTS (SELECT 1 FROM cks_outbox_tasks t WHERE t.task_id = e.task_id)`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}

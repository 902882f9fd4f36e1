package backendtest

import (
	"context"
	"testing"

	"github.com/cks-dev/cks/internal/driver"
)

// SetPayloadUnchecked writes payload as task id's payload through d's
// primitives, past every rule of the services: a value stored before a
// bound existed, as a test of what still serves or reports it needs.
func SetPayloadUnchecked(t testing.TB, d driver.Driver, id int64, payload []byte) {
	t.Helper()
	err := d.WithTx(context.Background(), driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{id}})
		if err != nil || len(rows) != 1 {
			t.Fatalf("task %d: %d rows, %v", id, len(rows), err)
		}
		rows[0].Payload = payload
		_, err = ex.TaskUpdateMany(ctx, rows)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

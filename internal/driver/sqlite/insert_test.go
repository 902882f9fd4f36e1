package sqlite_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// TestInsertReturnsWhatAReadReturns: the inserts send back no row, so the
// driver makes the row as stored from the row sent; it must be what a read
// returns, byte for byte, for inputs a read normalises (times in another
// zone, with nanoseconds and a monotonic reading; empty JSON), through the narrow insert of a new task and the
// whole one alike.
func TestInsertReturnsWhatAReadReturns(t *testing.T) {
	ctx := context.Background()
	d := open(t, filepath.Join(t.TempDir(), "cks.db"))
	ex := d.Executor()
	zone := time.FixedZone("x", 5*3600+1800)
	at := time.Now().In(zone) // with a monotonic reading and nanoseconds
	parent, err := ex.TaskInsertMany(ctx, []driver.TaskRow{{Type: "p", State: "OPEN", Revision: 1, CreatedAt: at, UpdatedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(title string) driver.TaskRow {
		return driver.TaskRow{Type: "t", Title: title, State: "OPEN", Priority: 3, MaxAttempts: 2, Revision: 1,
			CreatedBy: "alice", CreatedAt: at, UpdatedAt: at, StateChangedAt: at, ParentID: parent[0].ID,
			Payload: []byte(`{"b":  1}`)}
	}
	whole := fresh("claimed")
	whole.Attempts, whole.ClaimedBy, whole.ClaimedAt, whole.LeaseMs = 1, "w", at.Add(time.Second), 500
	whole.LeaseExpiresAt, whole.Result, whole.Metadata = at.Add(time.Minute), "r", []byte(` {"o":1} `)
	unset := fresh("no state change")
	unset.StateChangedAt = time.Time{}
	got, err := ex.TaskInsertMany(ctx, []driver.TaskRow{fresh("new"), whole, unset, fresh("dedupe")})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(got))
	for i, r := range got {
		ids[i] = r.ID
	}
	read, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, read) {
		t.Fatalf("insert returned\n %+v\nread back\n %+v", got, read)
	}
}

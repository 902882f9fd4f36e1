package drivertest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Schedules checks the schedule primitives (issue 42): a row round-trips
// every column (a NULL slot and fire as zero times), a second row of one
// name is a unique violation, the update writes the columns that change
// after creation and no other, a locked read inside a transaction reads
// the row, and a delete reports what it deleted.
func Schedules(t *testing.T, newDB NewDB) {
	d, _ := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	row := driver.ScheduleRow{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Misfire: "run_once",
		Task: `{"type":"report","title":"nightly report","payload":{"a":1}}`, CreatedBy: "alice",
		CreatedAt: T0, UpdatedAt: T0}
	must(t, "insert", ex.ScheduleInsert(ctx, row))
	if err := ex.ScheduleInsert(ctx, row); !errors.Is(err, driver.ErrUniqueViolation) {
		t.Fatalf("a second schedule of one name: err = %v, want ErrUniqueViolation", err)
	}
	other := row
	other.Name, other.Paused, other.PausedBy = "a-first", true, "bob"
	must(t, "insert another", ex.ScheduleInsert(ctx, other))

	got, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: "nightly"})
	must(t, "get", err)
	if len(got) != 1 || !reflect.DeepEqual(got[0], row) {
		t.Fatalf("get = %+v, want %+v", got, row)
	}
	if got, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: "nothing"}); err != nil || len(got) != 0 {
		t.Fatalf("get of no schedule = %+v, %v; want none", got, err)
	}
	list, err := ex.ScheduleList(ctx)
	must(t, "list", err)
	if len(list) != 2 || list[0].Name != "a-first" || list[1].Name != "nightly" || !list[0].Paused || list[0].PausedBy != "bob" {
		t.Fatalf("list = %+v, want a-first (paused by bob) then nightly", list)
	}

	// The fire's update, in a transaction that read the row locked.
	fired := row
	fired.Cron, fired.Task = "changed", "{}" // not written by an update
	fired.LastSlot, fired.LastFiredAt, fired.LastTaskID = T0.Add(time.Hour), T0.Add(time.Hour+time.Second), 42
	fired.UpdatedAt = T0.Add(time.Hour)
	err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		cur, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: "nightly", Lock: driver.LockUpdate})
		if err != nil || len(cur) != 1 {
			t.Errorf("locked get = %+v, %v; want the row", cur, err)
		}
		n, err := ex.ScheduleUpdate(ctx, fired)
		if n != 1 {
			t.Errorf("update wrote %d rows, want 1", n)
		}
		return err
	})
	must(t, "update", err)
	got, err = ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: "nightly"})
	must(t, "get after update", err)
	want := fired
	want.Cron, want.Task = row.Cron, row.Task
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("after update = %+v, want %+v", got, want)
	}
	if n, err := ex.ScheduleUpdate(ctx, driver.ScheduleRow{Name: "nothing", UpdatedAt: T0}); err != nil || n != 0 {
		t.Fatalf("update of no schedule = %d, %v; want 0", n, err)
	}

	if n, err := ex.ScheduleDelete(ctx, "nightly"); err != nil || n != 1 {
		t.Fatalf("delete = %d, %v; want 1", n, err)
	}
	if n, err := ex.ScheduleDelete(ctx, "nightly"); err != nil || n != 0 {
		t.Fatalf("second delete = %d, %v; want 0", n, err)
	}
	list, err = ex.ScheduleList(ctx)
	must(t, "list after delete", err)
	if len(list) != 1 || list[0].Name != "a-first" {
		t.Fatalf("list after delete = %+v, want a-first alone", list)
	}
}

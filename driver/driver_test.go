package driver_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/cks-dev/cks/driver"
)

// TestOnlyMoved: changing any one column of a TaskRow is a move (written
// narrowly by TaskMoveMany) exactly when the column is one TaskMoveMany
// writes. A column added to TaskRow and forgotten in OnlyMoved fails here,
// instead of being lost by a narrow write.
func TestOnlyMoved(t *testing.T) {
	moved := map[string]bool{"State": true, "Attempts": true, "Restarts": true, "ClaimedBy": true,
		"ClaimedAt": true, "LeaseTokenHash": true, "LeaseExpiresAt": true, "LeaseRenewedAt": true,
		"LeaseMs": true, "RunAfter": true, "Result": true, "LastError": true, "Question": true,
		"Answer": true, "ReviewNote": true, "UpdatedAt": true, "StateChangedAt": true}
	base := driver.TaskRow{ID: 1, Type: "t", Payload: []byte(`{}`), Metadata: []byte(`{}`),
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	typ := reflect.TypeFor[driver.TaskRow]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			after := base
			after.Payload, after.Metadata = []byte(`{}`), []byte(`{}`) // equal, not shared
			v := reflect.ValueOf(&after).Elem().Field(i)
			switch v.Interface().(type) {
			case string:
				v.SetString("changed")
			case int, int64:
				v.SetInt(v.Int() + 7)
			case []byte:
				v.SetBytes([]byte(`{"changed": true}`))
			case time.Time:
				v.Set(reflect.ValueOf(base.CreatedAt.Add(time.Hour)))
			default:
				t.Fatalf("column %s of type %s: teach this test (and OnlyMoved) its type", f.Name, f.Type)
			}
			if got := driver.OnlyMoved(base, after); got != moved[f.Name] {
				t.Errorf("OnlyMoved with %s changed = %v, want %v", f.Name, got, moved[f.Name])
			}
		})
	}
	if !driver.OnlyMoved(base, base) {
		t.Error("OnlyMoved of a row and itself = false")
	}
}

package driver_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
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

// TestLeaseTokenHashes: the allocation-free check agrees with
// driver.HashLeaseToken, refuses another token, and allocates nothing.
func TestLeaseTokenHashes(t *testing.T) {
	token := driver.NewLeaseToken()
	h := driver.HashLeaseToken(token)
	if !driver.LeaseTokenHashes(h, token) {
		t.Fatalf("driver.LeaseTokenHashes(driver.HashLeaseToken(%q), %q) = false", token, token)
	}
	for _, other := range []string{driver.NewLeaseToken(), "", token + "x"} {
		if driver.LeaseTokenHashes(h, other) {
			t.Fatalf("LeaseTokenHashes accepted %q for the hash of %q", other, token)
		}
	}
	if driver.LeaseTokenHashes("", token) {
		t.Fatal("LeaseTokenHashes accepted an empty hash")
	}
	if n := testing.AllocsPerRun(100, func() { driver.LeaseTokenHashes(h, token) }); n != 0 && !raceEnabled {
		t.Fatalf("LeaseTokenHashes allocates %v times a call, want 0", n)
	}
}

// TestNewLeaseToken: 128 random bits in hex, a fresh one each call, made
// with one allocation (the token itself).
func TestNewLeaseToken(t *testing.T) {
	a, b := driver.NewLeaseToken(), driver.NewLeaseToken()
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("NewLeaseToken gave %q then %q, want two different 32-digit hex tokens", a, b)
	}
	if n := testing.AllocsPerRun(100, func() { driver.NewLeaseToken() }); n != 1 && !raceEnabled {
		t.Fatalf("NewLeaseToken allocates %v times a call, want 1", n)
	}
}

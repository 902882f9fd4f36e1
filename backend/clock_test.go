package backend_test

import (
	"testing"
	"time"

	"github.com/cks-dev/cks/backend/backendtest"
)

// TestDatabaseNow: Postgres answers its own clock (the test's server runs
// on this host, so within a second of the host's, and later than a time
// read before the call); SQLite says it has none of its own.
func TestDatabaseNow(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		before := time.Now().Add(-time.Second)
		now, own, err := s.DatabaseNow(backendtest.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		wantOwn := s.Dialect() == "postgres"
		if own != wantOwn {
			t.Fatalf("own = %v on %s, want %v", own, s.Dialect(), wantOwn)
		}
		if own && (now.Before(before) || now.After(time.Now().Add(time.Second))) {
			t.Fatalf("the database's clock %v is not this host's (%v)", now, time.Now())
		}
		if !own && !now.IsZero() {
			t.Fatalf("SQLite answered a clock of its own: %v", now)
		}
	})
}

package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/postgres"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/jackc/pgx/v5/pgconn"
)

// readOnlyURL returns u with every transaction of its connections read-only,
// as on a hot standby. Only connections opened with this URL are affected.
func readOnlyURL(u string) string {
	if !strings.Contains(u, "://") {
		return u + " default_transaction_read_only=on"
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "default_transaction_read_only=on"
}

// seededSchema creates a schema holding storetest.SeedTask and returns its URL.
func seededSchema(t testing.TB) string {
	t.Helper()
	_, u := freshSchema(t)
	s := open(t, u)
	if _, _, err := s.Enqueue(testCtx(t), storetest.SeedTask); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStorageFaults: a server that runs this handle's transactions read-only.
// A full disk cannot be had from a test server; TestClassify covers it.
func TestStorageFaults(t *testing.T) {
	baseURL(t)
	storetest.StorageFaults(t, storetest.FaultStores{
		ReadOnly: func(t testing.TB, opts ...store.Option) store.Store {
			s, err := postgres.OpenUnchecked(testCtx(t), readOnlyURL(seededSchema(t)), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	})
}

// TestOpenReadOnlyIsRefused: Open on a read-only server fails at once with
// ErrStorageReadOnly, saying why, before the schema step's DDL would.
func TestOpenReadOnlyIsRefused(t *testing.T) {
	u := seededSchema(t)
	s, err := postgres.Open(testCtx(t), readOnlyURL(u))
	if err == nil {
		s.Close()
		t.Fatal("Open of a read-only database succeeded")
	}
	if !errors.Is(err, store.ErrStorageReadOnly) || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Fatalf("Open of a read-only database: %v, want ErrStorageReadOnly naming the causes", err)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		code string
		want error
	}{
		{"53100", store.ErrStorageFull},
		{"25006", store.ErrStorageReadOnly},
	} {
		pgErr := &pgconn.PgError{Code: c.code, Message: "from the server"}
		err := postgres.Classify(fmt.Errorf("postgres: enqueue: %w", pgErr))
		if !errors.Is(err, c.want) || !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pgErr) {
			t.Errorf("SQLSTATE %s: %v, want %v keeping the PgError", c.code, err, c.want)
		}
	}
	for _, err := range []error{nil, &pgconn.PgError{Code: "23505"}, errors.New("not from Postgres")} {
		if got := postgres.Classify(err); got != err {
			t.Errorf("Classify(%v) = %v, want it unchanged", err, got)
		}
	}
}

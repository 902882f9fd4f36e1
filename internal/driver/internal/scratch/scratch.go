// Package scratch creates throwaway Postgres schemas: the one
// implementation behind postgres.ScratchSchema (benchmarks against a
// deployment's server) and drivertest.PostgresURL (every Postgres test).
package scratch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// Schema creates an empty schema cks_scratch_<random> in the database at
// dbURL and returns a URL whose search_path points at it, and a function
// that drops it with everything in it.
func Schema(ctx context.Context, dbURL string) (string, func(context.Context) error, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: malformed database URL: %w", err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "cks_scratch_" + hex.EncodeToString(b)
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return fmt.Errorf("postgres: connect to %s: %w", u.Host, err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("postgres: create scratch schema: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop := func(ctx context.Context) error { return exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") }
	return u.String(), drop, nil
}

// Database creates an empty database cks_scratch_<random> on the server at
// dbURL (for a pooler, which keeps no search_path) and returns its name and
// a function that drops it, ending the sessions still on it.
func Database(ctx context.Context, dbURL string) (string, func(context.Context) error, error) {
	b := make([]byte, 6)
	rand.Read(b)
	name := "cks_scratch_" + hex.EncodeToString(b)
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return fmt.Errorf("postgres: connect: %w", err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("postgres: create scratch database: %w", err)
	}
	drop := func(ctx context.Context) error { return exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") }
	return name, drop, nil
}

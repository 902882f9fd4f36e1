package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// A read a command may answer without a hub (opSpec.offline: the process
// listing, after `cks dev` has exited, shows the final states): when no
// hub answers for the data directory — it holds no hub URL (a hub that
// stops removes it), or nothing listens there — and no URL was given, the
// operation is called on the directory's store directly, through the
// table, as the local operator, and stderr says so.

// offlineStore is the database a command reads without a hub, and its
// name for people: CKS_DATABASE_URL (the Postgres of `cks dev --database`;
// named, not shown, for it may hold a password), or the directory's
// embedded database when it exists (never created here); "" when there is
// none to read.
func offlineStore(dir datadir.Dir, e env) (url, name string) {
	if u := e.common().DatabaseURL; u != "" {
		return u, "of CKS_DATABASE_URL"
	}
	db := filepath.Join(string(dir), "cks.db")
	if st, err := os.Stat(db); err == nil && st.Mode().IsRegular() {
		return dir.DatabaseURL(), db
	}
	return "", ""
}

// noHub says why no hub answers for the data directory, from the error of
// finding it (err of cf.client) or of calling it; "" when one answered, or
// the URL was given (the caller asked for that hub).
func noHub(cf *clientFlags, e env, dir datadir.Dir, err error) string {
	if err == nil || or(cf.url, e.common().URL) != "" {
		return ""
	}
	if _, uerr := dir.ReadURL(); uerr != nil {
		return "no hub serves from data directory " + string(dir) + " (no " + dir.URLFile() + ")"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		u, _ := dir.ReadURL()
		return "no hub answers at " + u + " (connection refused), the URL in " + dir.URLFile()
	}
	return ""
}

// callOffline calls op with in on database dbURL as the local operator
// and decodes its output into out.
func callOffline(ctx context.Context, op ops.Operation, dbURL string, in, out any) error {
	st, err := backend.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	args, err := json.Marshal(in)
	if err != nil {
		return err
	}
	s := &ops.Services{Liveness: st.Liveness, Tasks: st.Tasks, Objects: st.Objects, Principals: st.Principals, Schedules: st.Schedules}
	res, err := ops.Call(auth.WithLocalOperator(ctx), s, op, ops.Request{Args: args})
	if err != nil {
		f := ops.FailureOf(ctx, nil, op.Spec().Name, err)
		return &f
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// readOffline answers a read of op without a hub, when none answers for
// the data directory and it has a store: it reports whether it did, and
// the error of the read. The note on stderr says where the answer came
// from.
func readOffline(ctx context.Context, op ops.Operation, cf *clientFlags, e env, hubErr error, in, out any) (bool, error) {
	dir := dataDir(cf.dataDir, e)
	why := noHub(cf, e, dir, hubErr)
	db, name := offlineStore(dir, e)
	if why == "" || db == "" {
		return false, nil
	}
	fmt.Fprintf(e.stderr, "cks: %s: read from the database %s directly\n", why, name)
	return true, callOffline(ctx, op, db, in, out)
}

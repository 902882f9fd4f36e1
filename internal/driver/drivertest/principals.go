package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

func grant(principal, resource, permission string) driver.GrantRow {
	return driver.GrantRow{PrincipalID: principal, Resource: resource, Permission: permission}
}

func principal(id string, s int) driver.PrincipalRow {
	return driver.PrincipalRow{ID: id, Name: "name of " + id, TokenHash: "hash-" + id,
		CreatedAt: T0.Add(time.Duration(s) * time.Second)}
}

// Principals checks the principal and grant primitives.
func Principals(t *testing.T, newDB NewDB) {
	t.Run("InsertAndRead", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		p := principal("p1", 0)
		must(t, "insert", ex.PrincipalInsert(ctx, p))
		got, err := ex.PrincipalByTokenHash(ctx, "hash-p1")
		must(t, "by token hash", err)
		if got != p {
			t.Fatalf("principal reads %+v, want %+v", got, p)
		}
		_, err = ex.PrincipalByTokenHash(ctx, "hash-nope")
		isNoRows(t, "unknown token hash", err)
		auth, err := ex.PrincipalAuth(ctx, "hash-p1")
		must(t, "auth", err)
		if auth.PrincipalRow != p || len(auth.Grants) != 0 {
			t.Fatalf("auth reads %+v, want %+v without grants", auth, p)
		}
		_, err = ex.PrincipalAuth(ctx, "hash-nope")
		isNoRows(t, "auth of an unknown token hash", err)
		got, err = ex.PrincipalGet(ctx, "p1")
		must(t, "get", err)
		if got != p {
			t.Fatalf("principal gets %+v, want %+v", got, p)
		}
		_, err = ex.PrincipalGet(ctx, "nope")
		isNoRows(t, "unknown id", err)
	})
	t.Run("InsertDuplicates", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		must(t, "insert", ex.PrincipalInsert(ctx, principal("p1", 0)))
		sameID := principal("p1", 1)
		sameID.TokenHash = "other"
		sameHash := principal("p2", 1)
		sameHash.TokenHash = "hash-p1"
		for name, p := range map[string]driver.PrincipalRow{"id": sameID, "token hash": sameHash} {
			if err := ex.PrincipalInsert(ctx, p); !errors.Is(err, driver.ErrUniqueViolation) {
				t.Errorf("duplicate %s: err = %v, want ErrUniqueViolation", name, err)
			}
		}
		if all, _ := ex.PrincipalList(ctx); len(all) != 1 {
			t.Fatalf("after refused duplicates: %d principals", len(all))
		}
	})
	t.Run("Grants", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		must(t, "insert", ex.PrincipalInsert(ctx, principal("p1", 0)))
		must(t, "insert", ex.PrincipalInsert(ctx, principal("P0", 0)))
		must(t, "no grants", ex.GrantInsertMany(ctx, nil))
		must(t, "grants", ex.GrantInsertMany(ctx, []driver.GrantRow{
			grant("p1", "/tasks", "read"), grant("p1", "/", "admin"), grant("p1", "/tasks", "create"),
			grant("p1", "/tasks", "read"), // twice in one call
			grant("P0", "/b", "read"),
		}))
		// Grants a principal has already are ignored.
		must(t, "again", ex.GrantInsertMany(ctx, []driver.GrantRow{grant("p1", "/", "admin"), grant("p1", "/a", "read")}))
		got, err := ex.GrantList(ctx, "p1")
		must(t, "grant list", err)
		want := []driver.GrantRow{grant("p1", "/", "admin"), grant("p1", "/a", "read"), grant("p1", "/tasks", "create"), grant("p1", "/tasks", "read")}
		if !slices.Equal(got, want) {
			t.Fatalf("grants of p1 = %v, want %v", got, want)
		}
		auth, err := ex.PrincipalAuth(ctx, "hash-p1")
		must(t, "auth", err)
		if auth.PrincipalRow != principal("p1", 0) || !slices.Equal(auth.Grants, want) {
			t.Fatalf("auth of p1 = %+v, want its row and grants %v", auth, want)
		}
		all, err := ex.GrantListAll(ctx)
		must(t, "grant list all", err)
		if want := append([]driver.GrantRow{grant("P0", "/b", "read")}, want...); !slices.Equal(all, want) {
			t.Fatalf("all grants = %v, want %v (byte order: P0 before p1)", all, want)
		}
		if none, err := ex.GrantList(ctx, "nope"); err != nil || len(none) != 0 {
			t.Fatalf("grants of no one = %v, %v", none, err)
		}
		err = ex.GrantInsertMany(ctx, []driver.GrantRow{grant("ghost", "/", "read")})
		if err == nil {
			t.Fatal("a grant of an unknown principal was accepted")
		}
	})
	t.Run("ListOrder", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		// Oldest first, ties by id in byte order.
		for _, p := range []driver.PrincipalRow{principal("c", 5), principal("b", 0), principal("B", 0)} {
			must(t, "insert", ex.PrincipalInsert(ctx, p))
		}
		all, err := ex.PrincipalList(ctx)
		must(t, "list", err)
		var ids []string
		for _, p := range all {
			ids = append(ids, p.ID)
		}
		if fmt.Sprint(ids) != "[B b c]" {
			t.Fatalf("principals in order %v, want [B b c]", ids)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		must(t, "insert", ex.PrincipalInsert(ctx, principal("p1", 0)))
		must(t, "insert", ex.PrincipalInsert(ctx, principal("p2", 0)))
		must(t, "grants", ex.GrantInsertMany(ctx, []driver.GrantRow{grant("p1", "/", "admin"), grant("p2", "/", "read")}))
		if found, err := ex.PrincipalDelete(ctx, "p1"); err != nil || !found {
			t.Fatalf("delete = %v, %v", found, err)
		}
		if found, err := ex.PrincipalDelete(ctx, "p1"); err != nil || found {
			t.Fatalf("delete again = %v, %v; want false", found, err)
		}
		all, _ := ex.GrantListAll(ctx)
		if want := []driver.GrantRow{grant("p2", "/", "read")}; !slices.Equal(all, want) {
			t.Fatalf("grants after the delete = %v, want %v (p1's went with it)", all, want)
		}
		_, err := ex.PrincipalByTokenHash(ctx, "hash-p1")
		isNoRows(t, "token of a deleted principal", err)
	})
	t.Run("CountWithGrant", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		for _, id := range []string{"a", "b", "c"} {
			must(t, "insert", ex.PrincipalInsert(ctx, principal(id, 0)))
		}
		must(t, "grants", ex.GrantInsertMany(ctx, []driver.GrantRow{
			grant("a", "/", "admin"), grant("b", "/", "admin"), grant("c", "/", "read"), grant("c", "/x", "admin")}))
		for _, c := range []struct {
			exclude string
			want    int
		}{{"", 2}, {"a", 1}, {"c", 2}} {
			err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				n, err := ex.PrincipalCountWithGrant(ctx, "/", "admin", c.exclude)
				if err == nil && n != c.want {
					err = fmt.Errorf("%d, want %d", n, c.want)
				}
				return err
			})
			must(t, "count of admins but "+c.exclude, err)
		}
	})
	t.Run("LeaseBinding", func(t *testing.T) { t.Parallel(); leaseBinding(t, newDB) })
	t.Run("Sessions", func(t *testing.T) { t.Parallel(); sessions(t, newDB) })
	t.Run("SessionTrim", func(t *testing.T) { t.Parallel(); sessionTrim(t, newDB) })
}

// sessions: a session reads back by its secret's hash, pages newest first
// from a cursor, is counted, is deleted by id or once expired, and goes
// with its principal.
func sessions(t *testing.T, newDB NewDB) {
	d, _ := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	for _, p := range []driver.PrincipalRow{principal("p1", 0), principal("p2", 0)} {
		must(t, "insert "+p.ID, ex.PrincipalInsert(ctx, p))
	}
	session := func(id, principal string, s int, ttl time.Duration) driver.SessionRow {
		at := T0.Add(time.Duration(s) * time.Second)
		return driver.SessionRow{ID: id, SecretHash: "secret-" + id, PrincipalID: principal, CreatedAt: at, ExpiresAt: at.Add(ttl)}
	}
	rows := []driver.SessionRow{session("s1", "p1", 0, time.Hour), session("s2", "p1", 1, time.Minute), session("s3", "p2", 2, time.Hour)}
	for _, s := range rows {
		must(t, "insert "+s.ID, ex.SessionInsert(ctx, s))
	}
	dup := session("s1", "p2", 3, time.Hour)
	dup.SecretHash = "other"
	if err := ex.SessionInsert(ctx, dup); !errors.Is(err, driver.ErrUniqueViolation) {
		t.Errorf("duplicate id: err = %v, want ErrUniqueViolation", err)
	}
	if err := ex.SessionInsert(ctx, session("s9", "nobody", 3, time.Hour)); err == nil {
		t.Errorf("a session of an unknown principal was inserted")
	}
	got, err := ex.SessionBySecretHash(ctx, "secret-s2")
	must(t, "by secret hash", err)
	if got != rows[1] {
		t.Fatalf("session reads %+v, want %+v", got, rows[1])
	}
	_, err = ex.SessionBySecretHash(ctx, "secret-nope")
	isNoRows(t, "unknown secret hash", err)
	first := driver.SessionPageParams{AfterCreatedAt: T0.Add(time.Hour), Limit: 10}
	list, err := ex.SessionPage(ctx, first)
	must(t, "page", err)
	if want := []driver.SessionRow{rows[2], rows[1], rows[0]}; !slices.Equal(list, want) {
		t.Fatalf("page = %+v, want %+v (newest first)", list, want)
	}
	list, err = ex.SessionPage(ctx, driver.SessionPageParams{AfterCreatedAt: rows[1].CreatedAt, AfterSessionID: rows[1].ID, Limit: 10})
	must(t, "page after s2", err)
	if want := []driver.SessionRow{rows[0]}; !slices.Equal(list, want) {
		t.Fatalf("page after s2 = %+v, want %+v", list, want)
	}
	if n, err := ex.SessionCount(ctx); err != nil || n != 3 {
		t.Fatalf("count = %d, %v; want 3", n, err)
	}
	// s2 expires at T0+61s: at that instant it is expired, s1 and s3 not.
	if n, err := ex.SessionDeleteExpired(ctx, T0.Add(61*time.Second)); err != nil || n != 1 {
		t.Fatalf("delete expired = %d, %v; want 1", n, err)
	}
	if found, err := ex.SessionDelete(ctx, "s1"); err != nil || !found {
		t.Fatalf("delete s1 = %v, %v; want found", found, err)
	}
	if found, err := ex.SessionDelete(ctx, "s1"); err != nil || found {
		t.Fatalf("delete s1 again = %v, %v; want not found", found, err)
	}
	// Deleting p2 removes its session.
	if _, err := ex.PrincipalDelete(ctx, "p2"); err != nil {
		t.Fatal(err)
	}
	if list, _ := ex.SessionPage(ctx, first); len(list) != 0 {
		t.Fatalf("sessions left: %+v, want none", list)
	}
}

// sessionTrim: SessionTrim deletes a principal's sessions but the new one
// and the newest Keep of the others — ties of created_at by id, the new
// one kept whatever its id — and no other principal's.
func sessionTrim(t *testing.T, newDB NewDB) {
	d, _ := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	for _, p := range []driver.PrincipalRow{{ID: "p1", Name: "one", TokenHash: "h1", CreatedAt: T0}, {ID: "p2", Name: "two", TokenHash: "h2", CreatedAt: T0}} {
		must(t, "insert "+p.ID, ex.PrincipalInsert(ctx, p))
	}
	add := func(id, principal string, s int) {
		at := T0.Add(time.Duration(s) * time.Second)
		must(t, "insert "+id, ex.SessionInsert(ctx, driver.SessionRow{ID: id, SecretHash: "secret-" + id, PrincipalID: principal, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}))
	}
	add("a", "p1", 0)
	add("b", "p1", 1)
	add("c", "p1", 2)
	add("d", "p1", 2) // ties with c: c is the newer by id
	add("0-new", "p1", 2)
	add("x", "p2", 0)
	n, err := ex.SessionTrim(ctx, driver.SessionTrimParams{PrincipalID: "p1", NewSessionID: "0-new", Keep: 2})
	if err != nil || n != 2 {
		t.Fatalf("trim = %d, %v; want 2 (a and b)", n, err)
	}
	list, err := ex.SessionPage(ctx, driver.SessionPageParams{AfterCreatedAt: T0.Add(time.Hour), Limit: 10})
	must(t, "page", err)
	var ids []string
	for _, r := range list {
		ids = append(ids, r.ID)
	}
	if want := []string{"0-new", "c", "d", "x"}; !slices.Equal(ids, want) {
		t.Fatalf("sessions after the trim: %q, want %q", ids, want)
	}
}

// leaseBinding: a principal bound to a task's lease is found only while that
// lease is the task's current one, and PrincipalDeleteEndedLeases removes it
// (and only it) once the lease ended or moved on.
func leaseBinding(t *testing.T, newDB NewDB) {
	d, db := open(t, newDB)
	ex, ctx := d.Executor(), Ctx(t)
	// Tasks 1 and 2, leased with h1 and h2 (what the ledger stores of a lease).
	for _, h := range []string{"h1", "h2"} {
		exec(t, db, "INSERT INTO cks_outbox_tasks (type, state, lease_token_hash, created_at, updated_at) VALUES ('t', 'RUNNING', '"+
			h+"', "+T0SQL+", "+T0SQL+")")
	}
	bound := func(id string, task int64, hash string) driver.PrincipalRow {
		p := principal(id, 0)
		p.TaskID, p.LeaseTokenHash = task, hash
		return p
	}
	for _, p := range []driver.PrincipalRow{principal("plain", 0), bound("w1", 1, "h1"), bound("w2", 2, "h2"),
		bound("stale", 2, "h-old")} {
		must(t, "insert "+p.ID, ex.PrincipalInsert(ctx, p))
	}
	valid := func(want ...string) {
		t.Helper()
		for _, id := range []string{"plain", "w1", "w2", "stale"} {
			p, err := ex.PrincipalByTokenHash(ctx, "hash-"+id)
			// Authentication's read decides alike.
			if a, aerr := ex.PrincipalAuth(ctx, "hash-"+id); a.PrincipalRow != p || errors.Is(aerr, driver.ErrNoRows) != errors.Is(err, driver.ErrNoRows) {
				t.Errorf("%s: auth reads %+v, %v; by token hash %+v, %v", id, a.PrincipalRow, aerr, p, err)
			}
			switch {
			case slices.Contains(want, id) && err != nil:
				t.Errorf("%s: %v, want it valid", id, err)
			case slices.Contains(want, id) && (p.ID != id || (id == "w1" && (p.TaskID != 1 || p.LeaseTokenHash != "h1"))):
				t.Errorf("%s reads %+v", id, p)
			case !slices.Contains(want, id) && !errors.Is(err, driver.ErrNoRows):
				t.Errorf("%s: err = %v, want ErrNoRows (its lease is not current)", id, err)
			}
		}
	}
	valid("plain", "w1", "w2")
	// Task 1's lease ends, task 2's moves to another holder.
	exec(t, db, "UPDATE cks_outbox_tasks SET lease_token_hash = '' WHERE task_id = 1")
	exec(t, db, "UPDATE cks_outbox_tasks SET lease_token_hash = 'h3' WHERE task_id = 2")
	valid("plain")
	n, err := ex.PrincipalDeleteEndedLeases(ctx)
	if err != nil || n != 3 {
		t.Fatalf("delete ended leases = %d, %v; want 3", n, err)
	}
	all, _ := ex.PrincipalList(ctx)
	if len(all) != 1 || all[0].ID != "plain" {
		t.Fatalf("principals left: %+v, want only the unbound one", all)
	}
	if n, err := ex.PrincipalDeleteEndedLeases(ctx); err != nil || n != 0 {
		t.Fatalf("second delete = %d, %v; want 0", n, err)
	}
}

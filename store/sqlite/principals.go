package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// CreatePrincipal implements store.Principals. A failure that is the
// storage's is classified, as every write's is.
func (s *Store) CreatePrincipal(ctx context.Context, p store.Principal, tokenHash string, grants []store.Grant) error {
	if err := store.ValidatePrincipal(p, tokenHash, grants); err != nil {
		return err
	}
	return s.faults.Note(classify(s.createPrincipal(ctx, p, tokenHash, grants)), store.Time(s.clock.Now()))
}

func (s *Store) createPrincipal(ctx context.Context, p store.Principal, tokenHash string, grants []store.Grant) error {
	tx, err := beginImmediate(ctx, s.writer)
	if err != nil {
		return fmt.Errorf("sqlite: create principal: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	// NULL unless the principal is bound to a lease.
	var taskID, leaseHash any
	if p.Lease != nil {
		taskID, leaseHash = p.Lease.TaskID, p.Lease.LeaseTokenHash
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO cks_principals (principal_id, name, token_hash, created_at, task_id, lease_token_hash)
VALUES (?, ?, ?, ?, ?, ?)`, p.ID, p.Name, tokenHash, fmtTime(p.CreatedAt), taskID, leaseHash)
	if isUniqueViolation(err) {
		return fmt.Errorf("principal %q: %w", p.ID, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create principal: %w", err)
	}
	for _, g := range grants {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO cks_grants (principal_id, resource, permission)
VALUES (?, ?, ?)`, p.ID, g.Resource, g.Permission); err != nil {
			return fmt.Errorf("sqlite: grant %s on %s: %w", g.Permission, g.Resource, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: create principal: %w", err)
	}
	return nil
}

// principalColumns is the column list of scanPrincipal (alias p).
const principalColumns = `p.principal_id, p.name, p.created_at, p.task_id, p.lease_token_hash`

// leaseCurrentSQL holds when the lease principal p (alias) is bound to is
// its task's current lease: CLAIMED or RUNNING under that token.
func leaseCurrentSQL() string {
	return `EXISTS (SELECT 1 FROM cks_outbox_tasks t WHERE t.task_id = p.task_id
	AND t.lease_token_hash = p.lease_token_hash AND p.lease_token_hash <> ''
	AND t.state IN ` + stateList([]ledger.State{ledger.Claimed, ledger.Running}) + `)`
}

// scanPrincipal scans principalColumns followed by the columns of extra.
func scanPrincipal(sc scanner, extra ...any) (store.Principal, error) {
	var (
		p         store.Principal
		created   string
		taskID    sql.NullInt64
		leaseHash sql.NullString
	)
	if err := sc.Scan(append([]any{&p.ID, &p.Name, &created, &taskID, &leaseHash}, extra...)...); err != nil {
		return p, err
	}
	if taskID.Valid {
		p.Lease = &store.LeaseBinding{TaskID: taskID.Int64, LeaseTokenHash: leaseHash.String}
	}
	var err error
	p.CreatedAt, err = parseTime(created)
	return p, err
}

// PrincipalByTokenHash implements store.Principals: one query, so a bound
// principal is refused by the same read that finds it.
func (s *Store) PrincipalByTokenHash(ctx context.Context, tokenHash string) (store.Principal, error) {
	if err := store.ValidateText("token_hash", tokenHash); err != nil {
		return store.Principal{}, err
	}
	p, err := scanPrincipal(s.reader.QueryRowContext(ctx, `SELECT `+principalColumns+`
FROM cks_principals p WHERE p.token_hash = ? AND (p.task_id IS NULL OR `+leaseCurrentSQL()+`)`, tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Principal{}, fmt.Errorf("token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Principal{}, fmt.Errorf("sqlite: principal by token: %w", err)
	}
	return p, nil
}

// DeleteEndedLeasePrincipals implements store.Principals.
func (s *Store) DeleteEndedLeasePrincipals(ctx context.Context) (int, error) {
	var n int64
	err := s.write(ctx, "delete ended lease principals", func(tx *wtx, _ time.Time) error {
		ended := `SELECT p.principal_id FROM cks_principals p WHERE p.task_id IS NOT NULL AND NOT ` + leaseCurrentSQL()
		if _, err := tx.ExecContext(ctx, `DELETE FROM cks_grants WHERE principal_id IN (`+ended+`)`); err != nil {
			return fmt.Errorf("sqlite: delete ended lease principals: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM cks_principals WHERE principal_id IN (`+ended+`)`)
		if err != nil {
			return fmt.Errorf("sqlite: delete ended lease principals: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// GrantsOf implements store.Principals.
func (s *Store) GrantsOf(ctx context.Context, principalID string) ([]store.Grant, error) {
	if err := store.ValidateText("id", principalID); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT resource, permission FROM cks_grants
WHERE principal_id = ? ORDER BY resource, permission`, principalID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: grants of %s: %w", principalID, err)
	}
	defer rows.Close()
	var out []store.Grant
	for rows.Next() {
		var g store.Grant
		if err := rows.Scan(&g.Resource, &g.Permission); err != nil {
			return nil, fmt.Errorf("sqlite: grants of %s: %w", principalID, err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// ListPrincipals implements store.Principals.
func (s *Store) ListPrincipals(ctx context.Context) ([]store.PrincipalGrants, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+principalColumns+`, g.resource, g.permission
FROM cks_principals p LEFT JOIN cks_grants g ON g.principal_id = p.principal_id
ORDER BY p.created_at, p.principal_id, g.resource, g.permission`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list principals: %w", err)
	}
	defer rows.Close()
	var out []store.PrincipalGrants
	for rows.Next() {
		var res, perm sql.NullString
		p, err := scanPrincipal(rows, &res, &perm)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list principals: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].ID != p.ID {
			out = append(out, store.PrincipalGrants{Principal: p, Grants: []store.Grant{}})
		}
		if res.Valid {
			last := &out[len(out)-1]
			last.Grants = append(last.Grants, store.Grant{Resource: res.String, Permission: perm.String})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list principals: %w", err)
	}
	return out, nil
}

// DeletePrincipal implements store.Principals. The write transaction is
// immediate, so the last-admin check and the delete cannot interleave with
// another writer.
func (s *Store) DeletePrincipal(ctx context.Context, principalID string) error {
	if err := store.ValidateText("id", principalID); err != nil {
		return err
	}
	return s.faults.Note(classify(s.deletePrincipal(ctx, principalID)), store.Time(s.clock.Now()))
}

func (s *Store) deletePrincipal(ctx context.Context, principalID string) error {
	tx, err := beginImmediate(ctx, s.writer)
	if err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	var isAdmin, admins int
	err = tx.QueryRowContext(ctx, `SELECT
  COALESCE(SUM(principal_id = ?), 0), COUNT(*)
FROM cks_grants WHERE resource = ? AND permission = ?`, principalID, store.AdminResource, store.AdminPermission).Scan(&isAdmin, &admins)
	if err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	}
	if isAdmin > 0 && admins <= 1 {
		return fmt.Errorf("principal %q is the last one holding admin on /; create another admin token first: %w", principalID, store.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM cks_grants WHERE principal_id = ?`, principalID); err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM cks_principals WHERE principal_id = ?`, principalID)
	if err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	} else if n == 0 {
		return fmt.Errorf("principal %q: %w", principalID, store.ErrNotFound)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete principal: %w", err)
	}
	return nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// CreatePrincipal implements store.Principals. A failure that is the
// storage's is classified, as every write's is.
func (s *Store) CreatePrincipal(ctx context.Context, p store.Principal, tokenHash string, grants []store.Grant) error {
	if err := store.ValidatePrincipal(p, tokenHash, grants); err != nil {
		return err
	}
	return s.fault(s.createPrincipal(ctx, p, tokenHash, grants))
}

func (s *Store) createPrincipal(ctx context.Context, p store.Principal, tokenHash string, grants []store.Grant) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: create principal: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	var (
		taskID    *int64 // NULL unless bound
		leaseHash *string
	)
	if p.Lease != nil {
		taskID, leaseHash = &p.Lease.TaskID, &p.Lease.LeaseTokenHash
	}
	_, err = tx.Exec(ctx, `INSERT INTO cks_principals (principal_id, name, token_hash, created_at, task_id, lease_token_hash)
VALUES ($1, $2, $3, $4, $5, $6)`, p.ID, p.Name, tokenHash, store.Time(p.CreatedAt), taskID, leaseHash)
	if isUniqueViolation(err) {
		return fmt.Errorf("principal %q: %w", p.ID, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: create principal: %w", err)
	}
	for _, g := range grants {
		if _, err := tx.Exec(ctx, `INSERT INTO cks_grants (principal_id, resource, permission)
VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, p.ID, g.Resource, g.Permission); err != nil {
			return fmt.Errorf("postgres: grant %s on %s: %w", g.Permission, g.Resource, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: create principal: %w", err)
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
func scanPrincipal(row pgx.Row, extra ...any) (store.Principal, error) {
	var (
		p         store.Principal
		taskID    *int64
		leaseHash *string
	)
	if err := row.Scan(append([]any{&p.ID, &p.Name, &p.CreatedAt, &taskID, &leaseHash}, extra...)...); err != nil {
		return p, err
	}
	if taskID != nil {
		p.Lease = &store.LeaseBinding{TaskID: *taskID}
		if leaseHash != nil {
			p.Lease.LeaseTokenHash = *leaseHash
		}
	}
	p.CreatedAt = store.Time(p.CreatedAt)
	return p, nil
}

// PrincipalByTokenHash implements store.Principals: one query, so a bound
// principal is refused by the same read that finds it.
func (s *Store) PrincipalByTokenHash(ctx context.Context, tokenHash string) (store.Principal, error) {
	if err := store.ValidateText("token_hash", tokenHash); err != nil {
		return store.Principal{}, err
	}
	p, err := scanPrincipal(s.pool.QueryRow(ctx, `SELECT `+principalColumns+`
FROM cks_principals p WHERE p.token_hash = $1 AND (p.task_id IS NULL OR `+leaseCurrentSQL()+`)`, tokenHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Principal{}, fmt.Errorf("token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Principal{}, fmt.Errorf("postgres: principal by token: %w", err)
	}
	return p, nil
}

// DeleteEndedLeasePrincipals implements store.Principals (grants go by ON
// DELETE CASCADE).
func (s *Store) DeleteEndedLeasePrincipals(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM cks_principals p WHERE p.task_id IS NOT NULL AND NOT `+leaseCurrentSQL())
	if err != nil {
		return 0, fmt.Errorf("postgres: delete ended lease principals: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// GrantsOf implements store.Principals.
func (s *Store) GrantsOf(ctx context.Context, principalID string) ([]store.Grant, error) {
	if err := store.ValidateText("id", principalID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT resource, permission FROM cks_grants
WHERE principal_id = $1 ORDER BY resource COLLATE "C", permission COLLATE "C"`, principalID)
	if err != nil {
		return nil, fmt.Errorf("postgres: grants of %s: %w", principalID, err)
	}
	defer rows.Close()
	var out []store.Grant
	for rows.Next() {
		var g store.Grant
		if err := rows.Scan(&g.Resource, &g.Permission); err != nil {
			return nil, fmt.Errorf("postgres: grants of %s: %w", principalID, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: grants of %s: %w", principalID, err)
	}
	return out, nil
}

// ListPrincipals implements store.Principals.
func (s *Store) ListPrincipals(ctx context.Context) ([]store.PrincipalGrants, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+principalColumns+`, g.resource, g.permission
FROM cks_principals p LEFT JOIN cks_grants g ON g.principal_id = p.principal_id
ORDER BY p.created_at, p.principal_id COLLATE "C", g.resource COLLATE "C", g.permission COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list principals: %w", err)
	}
	defer rows.Close()
	var out []store.PrincipalGrants
	for rows.Next() {
		var res, perm *string
		p, err := scanPrincipal(rows, &res, &perm)
		if err != nil {
			return nil, fmt.Errorf("postgres: list principals: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].ID != p.ID {
			out = append(out, store.PrincipalGrants{Principal: p, Grants: []store.Grant{}})
		}
		if res != nil && perm != nil {
			last := &out[len(out)-1]
			last.Grants = append(last.Grants, store.Grant{Resource: *res, Permission: *perm})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list principals: %w", err)
	}
	return out, nil
}

// DeletePrincipal implements store.Principals. The admin grants on / are
// locked FOR UPDATE before they are counted, so of two concurrent deletes of
// the last two admins the second waits, no longer sees the first's row, and is
// refused.
func (s *Store) DeletePrincipal(ctx context.Context, principalID string) error {
	if err := store.ValidateText("id", principalID); err != nil {
		return err
	}
	return s.fault(s.deletePrincipal(ctx, principalID))
}

func (s *Store) deletePrincipal(ctx context.Context, principalID string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: delete principal: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	rows, err := tx.Query(ctx, `SELECT principal_id FROM cks_grants
WHERE resource = $1 AND permission = $2 FOR UPDATE`, store.AdminResource, store.AdminPermission)
	if err != nil {
		return fmt.Errorf("postgres: delete principal: %w", err)
	}
	admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: delete principal: %w", err)
	}
	isAdmin := false
	for _, id := range admins {
		isAdmin = isAdmin || id == principalID
	}
	if isAdmin && len(admins) <= 1 {
		return fmt.Errorf("principal %q is the last one holding admin on /; create another admin token first: %w", principalID, store.ErrConflict)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM cks_principals WHERE principal_id = $1`, principalID)
	if err != nil {
		return fmt.Errorf("postgres: delete principal: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("principal %q: %w", principalID, store.ErrNotFound)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: delete principal: %w", err)
	}
	return nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/store"
)

// CreatePrincipal implements store.Principals.
func (s *Store) CreatePrincipal(ctx context.Context, p store.Principal, tokenHash string, grants []store.Grant) error {
	if err := store.ValidatePrincipal(p, tokenHash, grants); err != nil {
		return err
	}
	tx, err := beginImmediate(ctx, s.writer)
	if err != nil {
		return fmt.Errorf("sqlite: create principal: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	_, err = tx.ExecContext(ctx, `INSERT INTO cks_principals (principal_id, name, token_hash, created_at)
VALUES (?, ?, ?, ?)`, p.ID, p.Name, tokenHash, fmtTime(p.CreatedAt))
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

// PrincipalByTokenHash implements store.Principals.
func (s *Store) PrincipalByTokenHash(ctx context.Context, tokenHash string) (store.Principal, error) {
	if err := store.ValidateText("token_hash", tokenHash); err != nil {
		return store.Principal{}, err
	}
	var (
		p       store.Principal
		created string
	)
	err := s.reader.QueryRowContext(ctx, `SELECT principal_id, name, created_at
FROM cks_principals WHERE token_hash = ?`, tokenHash).Scan(&p.ID, &p.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("token: %w", store.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("sqlite: principal by token: %w", err)
	}
	p.CreatedAt, err = parseTime(created)
	return p, err
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
	rows, err := s.reader.QueryContext(ctx, `SELECT p.principal_id, p.name, p.created_at, g.resource, g.permission
FROM cks_principals p LEFT JOIN cks_grants g ON g.principal_id = p.principal_id
ORDER BY p.created_at, p.principal_id, g.resource, g.permission`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list principals: %w", err)
	}
	defer rows.Close()
	var out []store.PrincipalGrants
	for rows.Next() {
		var (
			id, name, created string
			res, perm         sql.NullString
		)
		if err := rows.Scan(&id, &name, &created, &res, &perm); err != nil {
			return nil, fmt.Errorf("sqlite: list principals: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			at, err := parseTime(created)
			if err != nil {
				return nil, fmt.Errorf("sqlite: list principals: %w", err)
			}
			out = append(out, store.PrincipalGrants{Principal: store.Principal{ID: id, Name: name, CreatedAt: at}, Grants: []store.Grant{}})
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

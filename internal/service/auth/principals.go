package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Service is authentication and authorization over a driver: identities,
// the hashes of their tokens, their grants and the studio's sessions, and
// the checks of a bearer token (Authenticate), a session (Login,
// AuthenticateSession, Logout) and a permission (Check, checkWithin), with
// every rule of them here, once for both dialects — the input check
// (validatePrincipal), a principal and its grants written in one
// transaction, the lease binding of a task's agent token (it authenticates
// only while its task's lease is the one it was issued with: taskAuth
// checks it against the task's row, and for the principal rows earlier
// versions wrote the driver's PrincipalByTokenHash decides it in the read
// that finds it, so a credential dies in the very transaction that ends its
// lease), listings that never show a token hash, and a delete that keeps
// one principal holding admin on "/" (the check and the delete in one
// transaction). Writes run in driver transactions, so their storage faults
// are the driver's to remember.
type Service struct {
	db      driver.Driver
	revoked revocations
	tokens  *tokenCache // nil: none (CacheTokens)
}

// NewService returns the principals, grants and sessions of db.
func NewService(db driver.Driver) *Service { return &Service{db: db} }

// CreatePrincipal stores p (with its lease binding, if any) with the hash
// of its token and its grants in one transaction. A duplicate ID or token
// hash is ErrConflict.
func (s *Service) CreatePrincipal(ctx context.Context, p cks.Principal, tokenHash string, grants []cks.Grant) error {
	if err := validatePrincipal(p, tokenHash, grants); err != nil {
		return err
	}
	row := driver.PrincipalRow{ID: p.ID, Name: p.Name, TokenHash: tokenHash, CreatedAt: driver.Time(p.CreatedAt)}
	if p.Lease != nil {
		row.TaskID, row.LeaseTokenHash = p.Lease.TaskID, p.Lease.LeaseTokenHash
	}
	rows := make([]driver.GrantRow, len(grants))
	for i, g := range grants {
		rows[i] = driver.GrantRow{PrincipalID: p.ID, Resource: g.Resource, Permission: g.Permission}
	}
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if err := ex.PrincipalInsert(ctx, row); err != nil {
			return err
		}
		return ex.GrantInsertMany(ctx, rows)
	})
	switch {
	case errors.Is(err, driver.ErrUniqueViolation):
		return fmt.Errorf("principal %q: %w", p.ID, cks.ErrConflict)
	case err != nil:
		return fmt.Errorf("create principal %s: %w", p.ID, err)
	}
	return nil
}

// PrincipalByTokenHash returns the principal whose token hashes to
// tokenHash, or ErrNotFound. A principal bound to a lease (p.Lease) that
// is no longer current — its task not CLAIMED or RUNNING under that
// lease token — is ErrNotFound too, decided in the same query.
func (s *Service) PrincipalByTokenHash(ctx context.Context, tokenHash string) (cks.Principal, error) {
	if err := cks.ValidateText("token_hash", tokenHash); err != nil {
		return cks.Principal{}, err
	}
	r, err := s.db.Executor().PrincipalByTokenHash(ctx, tokenHash)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.Principal{}, fmt.Errorf("token: %w", cks.ErrNotFound)
	}
	if err != nil {
		return cks.Principal{}, fmt.Errorf("principal by token: %w", err)
	}
	return principalOf(r), nil
}

// principalAuth is PrincipalByTokenHash with the principal's grants, read
// together (driver.PrincipalAuth: on Postgres one statement), or taken from
// the token cache when s keeps one (CacheTokens).
func (s *Service) principalAuth(ctx context.Context, tokenHash string) (cks.Principal, []cks.Grant, error) {
	var gen uint64
	if s.tokens != nil {
		e, ok, g := s.tokens.get(tokenHash)
		if ok {
			return e.p, e.grants, nil
		}
		gen = g
	}
	r, err := s.db.Executor().PrincipalAuth(ctx, tokenHash)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.Principal{}, nil, fmt.Errorf("token: %w", cks.ErrNotFound)
	}
	if err != nil {
		return cks.Principal{}, nil, fmt.Errorf("principal by token: %w", err)
	}
	p, grants := principalOf(r.PrincipalRow), grantsOf(r.Grants)
	if s.tokens != nil {
		s.tokens.put(tokenHash, gen, p, grants)
	}
	return p, grants, nil
}

// grantsOf are rows as grants (never nil).
func grantsOf(rows []driver.GrantRow) []cks.Grant {
	out := make([]cks.Grant, len(rows))
	for i, g := range rows {
		out[i] = cks.Grant{Resource: g.Resource, Permission: g.Permission}
	}
	return out
}

// deleteEndedLeasePrincipals deletes, with their grants, the principals
// bound to leases that are no longer current (they no longer
// authenticate; this only removes the rows), and returns how many.
func (s *Service) deleteEndedLeasePrincipals(ctx context.Context) (int, error) {
	var n int
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		n, err = ex.PrincipalDeleteEndedLeases(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete ended lease principals: %w", err)
	}
	return n, nil
}

// GrantsOf returns the grants of a principal, ordered by resource then
// permission; those of a task token's principal ("task/ID", no row) are
// TaskTokenGrants.
func (s *Service) GrantsOf(ctx context.Context, principalID string) ([]cks.Grant, error) {
	if err := cks.ValidateText("id", principalID); err != nil {
		return nil, err
	}
	if id, ok := taskPrincipal(principalID); ok {
		return TaskTokenGrants(id), nil
	}
	rows, err := s.db.Executor().GrantList(ctx, principalID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", principalID, err)
	}
	var out []cks.Grant
	for _, g := range rows {
		out = append(out, cks.Grant{Resource: g.Resource, Permission: g.Permission})
	}
	return out, nil
}

// ListPrincipals returns every principal with its grants, oldest first
// (ties by id). Token hashes are never returned.
//
// the principals and the grants are read in one snapshot.
func (s *Service) ListPrincipals(ctx context.Context) ([]cks.PrincipalGrants, error) {
	var (
		ps     []driver.PrincipalRow
		grants []driver.GrantRow
	)
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if ps, err = ex.PrincipalList(ctx); err != nil {
			return err
		}
		grants, err = ex.GrantListAll(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list principals: %w", err)
	}
	of := map[string][]cks.Grant{}
	for _, g := range grants {
		of[g.PrincipalID] = append(of[g.PrincipalID], cks.Grant{Resource: g.Resource, Permission: g.Permission})
	}
	out := make([]cks.PrincipalGrants, len(ps))
	for i, p := range ps {
		gs := of[p.ID]
		if gs == nil {
			gs = []cks.Grant{}
		}
		out[i] = cks.PrincipalGrants{Principal: principalOf(p), Grants: gs}
	}
	return out, nil
}

// DeletePrincipal removes a principal and its grants, so its token stops
// authenticating at once. An unknown id is ErrNotFound. Deleting the last
// principal holding admin on "/" is ErrConflict: nobody could then manage
// tokens, and only a fresh database would recover an admin. The check and
// the delete are one transaction, so two concurrent deletes cannot remove
// the last two admins.
//
// The count of the other admins and the delete are one transaction, in which
// the count stays true (the driver locks what it counts), so two concurrent
// deletes cannot remove the last two admins.
func (s *Service) DeletePrincipal(ctx context.Context, principalID string) error {
	if err := cks.ValidateText("id", principalID); err != nil {
		return err
	}
	if _, ok := taskPrincipal(principalID); ok {
		return &cks.FieldError{Field: "id", Expected: "the id of a token's principal (" + principalID +
			" is a task's agent token, which has none to delete: it ends with the task's lease, which stop_task ends)"}
	}
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		others, err := ex.PrincipalCountWithGrant(ctx, AdminResource, AdminPermission, principalID)
		if err != nil {
			return err
		}
		if others == 0 {
			grants, err := ex.GrantList(ctx, principalID)
			if err != nil {
				return err
			}
			for _, g := range grants {
				if g.Resource == AdminResource && g.Permission == AdminPermission {
					return fmt.Errorf("principal %q is the last one holding admin on /; create another admin token first: %w",
						principalID, cks.ErrConflict)
				}
			}
		}
		found, err := ex.PrincipalDelete(ctx, principalID)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("principal %q: %w", principalID, cks.ErrNotFound)
		}
		return ex.Notify(ctx, cks.TopicPrincipals) // the other processes' token caches
	})
	if err != nil && !errors.Is(err, cks.ErrConflict) && !errors.Is(err, cks.ErrNotFound) {
		return fmt.Errorf("delete principal %s: %w", principalID, err)
	}
	if err == nil {
		if s.tokens != nil {
			s.tokens.drop(false)
		}
		s.noteRevoked()
	}
	return err
}

// principalOf is the record of a row: everything but the token hash.
func principalOf(r driver.PrincipalRow) cks.Principal {
	p := cks.Principal{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}
	if r.TaskID != 0 {
		p.Lease = &cks.LeaseBinding{TaskID: r.TaskID, LeaseTokenHash: r.LeaseTokenHash}
	}
	return p
}

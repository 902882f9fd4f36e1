package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Studio sessions (issue 22, DESIGN.md §10). The studio signs in with a
// bearer token once, in the login form's POST, and then holds a session of
// its own: a fresh random secret in its cookie, of which the hub stores
// only the SHA-256 hash, bound to the token's principal, expiring after
// SessionTTL (absolute: using a session does not extend it) and deleted by
// sign-out. A cookie therefore never carries a bearer token, a copied
// database yields no usable cookie, and a cookie that leaked is dead after
// sign-out, expiry, revoke_session or the revocation of its principal.

// SessionTTL is how long a studio session lasts from its sign-in.
const SessionTTL = 7 * 24 * time.Hour

// MaxSessionsPerPrincipal is how many studio sessions one principal keeps
// at once: a sign-in past it signs out that principal's oldest, so that no
// token can fill the table (and every listing of it) with sessions, and a
// person signed in on a few browsers is never signed out by the cap.
const MaxSessionsPerPrincipal = 16

// sessionPrefix starts every session secret. It differs from a bearer
// token's ("cks_"), so neither is ever taken for the other: a token put in
// the cookie is a malformed session, a secret sent as a bearer token a
// malformed token.
const sessionPrefix = "ckss_"

// newSessionSecret returns a fresh random session secret (256 bits, as a
// bearer token's).
func newSessionSecret() (string, error) { return newSecret(sessionPrefix) }

// checkSessionFormat reports whether secret has the shape newSessionSecret
// produces.
func checkSessionFormat(secret string) error {
	if secret == "" {
		return fmt.Errorf("missing session: sign in to the studio again: %w", ErrUnauthenticated)
	}
	if !wellFormed(secret, sessionPrefix) {
		// Also a bearer token put in the cookie: the cookie carries sessions only.
		return fmt.Errorf("malformed session cookie (it holds no session; sign in again): %w", ErrUnauthenticated)
	}
	return nil
}

// Login checks the bearer token tok and opens a session of its principal,
// created at now and expiring SessionTTL later. It returns the session's
// secret, for the cookie and nowhere else. A failure of the token is
// ErrUnauthenticated, as Authenticate's. The credential of a claim (bound
// to a lease) cannot sign in: a session would outlive its lease.
func (s *Service) Login(ctx context.Context, tok string, now time.Time) (string, cks.Session, error) {
	p, err := s.Authenticate(ctx, tok)
	if err != nil {
		return "", cks.Session{}, err
	}
	if p.Lease != nil {
		return "", cks.Session{}, fmt.Errorf("a claim'sess task credential cannot sign in to the studio: %w", ErrUnauthenticated)
	}
	secret, err := newSessionSecret()
	if err != nil {
		return "", cks.Session{}, err
	}
	now = driver.Time(now)
	sess := cks.Session{ID: uuid.NewString(), PrincipalID: p.ID, PrincipalName: p.Name, CreatedAt: now, ExpiresAt: now.Add(SessionTTL)}
	if err := s.CreateSession(ctx, sess, HashToken(secret)); err != nil {
		return "", cks.Session{}, fmt.Errorf("auth: open a session of %sess: %w", p.ID, err)
	}
	return secret, sess, nil
}

// AuthenticateSession returns the session whose secret the cookie holds
// and its principal. Every failure matches ErrUnauthenticated: a missing
// or malformed secret (a bearer token is one), and an unknown, signed-out,
// revoked or (at now) expired session.
func (s *Service) AuthenticateSession(ctx context.Context, secret string, now time.Time) (cks.Principal, cks.Session, error) {
	if err := checkSessionFormat(secret); err != nil {
		return cks.Principal{}, cks.Session{}, err
	}
	p, sess, err := s.SessionBySecretHash(ctx, HashToken(secret), now)
	if errors.Is(err, cks.ErrNotFound) {
		return p, sess, fmt.Errorf("unknown session (signed out, revoked or expired; sign in again): %w", ErrUnauthenticated)
	}
	return p, sess, err
}

// sessionKey is the context key of the studio session a request came with.
type sessionKey struct{}

// WithSession records in ctx the id of the studio session its request
// authenticated with (the hub's cookie authentication): the studio's
// access page marks that session as the viewer's own.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

// SessionFrom returns the id of the studio session recorded in ctx; ""
// when the request came with a bearer token, or none.
func SessionFrom(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// Logout ends the session whose secret the cookie holds: its row is
// deleted, so the same cookie value never authenticates again. A secret
// that names no session (malformed, already ended) is nothing to end.
func (s *Service) Logout(ctx context.Context, secret string, now time.Time) error {
	if checkSessionFormat(secret) != nil {
		return nil
	}
	_, sess, err := s.SessionBySecretHash(ctx, HashToken(secret), now)
	if errors.Is(err, cks.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.DeleteSession(ctx, sess.ID); err != nil && !errors.Is(err, cks.ErrNotFound) {
		return err
	}
	return nil
}

// DeleteEndedCredentials is the periodic cleanup of credentials that no
// longer authenticate (the lease reaper runs it): the lease-bound
// principals of ended leases (deleteEndedLeasePrincipals: rows that claims
// of earlier versions made for each task's agent credential, which no
// longer authenticate already; a claim now writes none, see
// taskTokenPrefix — credentials made with `cks token create --task` are
// not bound to a lease and are left alone) and the sessions expired at now
// (deleteExpiredSessions). It returns how many rows of both it deleted.
func (s *Service) DeleteEndedCredentials(ctx context.Context, now time.Time) (int, error) {
	n, err := s.deleteEndedLeasePrincipals(ctx)
	if err != nil {
		return n, err
	}
	m, err := s.deleteExpiredSessions(ctx, now)
	return n + m, err
}

// CreateSession stores a studio session with the hash of its secret
// (s.PrincipalName is not stored) and, in the same transaction, signs out
// its principal's oldest sessions past MaxSessionsPerPrincipal. An unknown
// principal is ErrNotFound, a duplicate id or secret hash ErrConflict.
//
// the principal is read in the insert's transaction, so an unknown one is
// ErrNotFound.
func (s *Service) CreateSession(ctx context.Context, sess cks.Session, secretHash string) error {
	for _, f := range []struct{ name, v string }{{"id", sess.ID}, {"principal_id", sess.PrincipalID}, {"secret_hash", secretHash}} {
		if err := cks.ValidateText(f.name, f.v); err != nil {
			return err
		}
		if f.v == "" {
			return &cks.FieldError{Field: f.name, Expected: "a non-empty value"}
		}
	}
	if !sess.ExpiresAt.After(sess.CreatedAt) {
		return &cks.FieldError{Field: "expires_at", Expected: "a time after created_at"}
	}
	row := driver.SessionRow{ID: sess.ID, SecretHash: secretHash, PrincipalID: sess.PrincipalID,
		CreatedAt: driver.Time(sess.CreatedAt), ExpiresAt: driver.Time(sess.ExpiresAt)}
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if _, err := ex.PrincipalGet(ctx, sess.PrincipalID); err != nil {
			if errors.Is(err, driver.ErrNoRows) {
				return fmt.Errorf("principal %q: %w", sess.PrincipalID, cks.ErrNotFound)
			}
			return err
		}
		if err := ex.SessionInsert(ctx, row); err != nil {
			return err
		}
		_, err := ex.SessionTrim(ctx, driver.SessionTrimParams{PrincipalID: sess.PrincipalID, NewSessionID: sess.ID,
			Keep: MaxSessionsPerPrincipal - 1})
		return err
	})
	switch {
	case errors.Is(err, driver.ErrUniqueViolation):
		return fmt.Errorf("session %q: %w", sess.ID, cks.ErrConflict)
	case errors.Is(err, cks.ErrNotFound):
		return err
	case err != nil:
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// SessionBySecretHash returns the session whose secret hashes to
// secretHash and its principal, or ErrNotFound. A session expired at
// now is ErrNotFound too, and is deleted.
//
// Expiry is decided here, by the caller's now: an expired session is refused
// and its row deleted on the spot (the lease reaper deletes the ones nobody
// presents).
func (s *Service) SessionBySecretHash(ctx context.Context, secretHash string, now time.Time) (cks.Principal, cks.Session, error) {
	if err := cks.ValidateText("secret_hash", secretHash); err != nil {
		return cks.Principal{}, cks.Session{}, err
	}
	ex := s.db.Executor()
	r, err := ex.SessionBySecretHash(ctx, secretHash)
	if errors.Is(err, driver.ErrNoRows) {
		return cks.Principal{}, cks.Session{}, fmt.Errorf("session: %w", cks.ErrNotFound)
	}
	if err != nil {
		return cks.Principal{}, cks.Session{}, fmt.Errorf("session by secret: %w", err)
	}
	if !now.Before(r.ExpiresAt) {
		if _, err := ex.SessionDelete(ctx, r.ID); err != nil {
			return cks.Principal{}, cks.Session{}, fmt.Errorf("delete expired session %s: %w", r.ID, err)
		}
		return cks.Principal{}, cks.Session{}, fmt.Errorf("session %s expired at %s: %w", r.ID, r.ExpiresAt.Format(time.RFC3339), cks.ErrNotFound)
	}
	p, err := ex.PrincipalGet(ctx, r.PrincipalID)
	if errors.Is(err, driver.ErrNoRows) { // deleted since the read above: its sessions went with it
		return cks.Principal{}, cks.Session{}, fmt.Errorf("session: %w", cks.ErrNotFound)
	}
	if err != nil {
		return cks.Principal{}, cks.Session{}, fmt.Errorf("principal of session %s: %w", r.ID, err)
	}
	return principalOf(p), sessionOf(r, p.Name), nil
}

// endOfTime is the cursor of a first page: after every session's sign-in.
var endOfTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// ListSessions is list_sessions: one page of the sessions, newest first
// (ties by id), each with its principal's name, and how many there are in
// all; never a secret hash. A bad cursor or limit is a FieldError naming
// it.
//
// the page, the count and the names of the page's principals are read in
// one snapshot.
func (s *Service) ListSessions(ctx context.Context, in cks.ListSessionsInput) (cks.SessionList, error) {
	limit, err := cks.PageLimit(in.Limit)
	if err != nil {
		return cks.SessionList{}, err
	}
	after, err := cks.ParseTimeCursor(in.Cursor)
	if err != nil {
		return cks.SessionList{}, err
	}
	if after.ID == "" {
		after.At = endOfTime
	}
	out := cks.SessionList{Sessions: []cks.Session{}}
	err = s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		rows, err := ex.SessionPage(ctx, driver.SessionPageParams{AfterCreatedAt: driver.Time(after.At), AfterSessionID: after.ID, Limit: limit + 1})
		if err != nil {
			return err
		}
		n, err := ex.SessionCount(ctx)
		if err != nil {
			return err
		}
		out.Total = int(n)
		if len(rows) > limit {
			rows = rows[:limit]
			last := rows[limit-1]
			out.Next = cks.TimeCursor{At: last.CreatedAt, ID: last.ID}.String()
		}
		names := map[string]string{}
		for _, r := range rows {
			if _, ok := names[r.PrincipalID]; !ok {
				p, err := ex.PrincipalGet(ctx, r.PrincipalID)
				if err != nil && !errors.Is(err, driver.ErrNoRows) {
					return err
				}
				names[r.PrincipalID] = p.Name
			}
			out.Sessions = append(out.Sessions, sessionOf(r, names[r.PrincipalID]))
		}
		return nil
	})
	if err != nil {
		return cks.SessionList{}, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession removes a session, so its cookie stops authenticating
// at once; an unknown id is ErrNotFound.
func (s *Service) DeleteSession(ctx context.Context, id string) error {
	if err := cks.ValidateText("id", id); err != nil {
		return err
	}
	var found bool
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		found, err = ex.SessionDelete(ctx, id)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete session %s: %w", id, err)
	case !found:
		return fmt.Errorf("session %q: %w", id, cks.ErrNotFound)
	}
	s.noteRevoked()
	return nil
}

// deleteExpiredSessions removes the sessions expired at now and
// returns how many.
func (s *Service) deleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		n, err = ex.SessionDeleteExpired(ctx, driver.Time(now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return n, nil
}

// sessionOf is the record of a row: everything but the secret's hash.
func sessionOf(r driver.SessionRow, principalName string) cks.Session {
	return cks.Session{ID: r.ID, PrincipalID: r.PrincipalID, PrincipalName: principalName,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
}

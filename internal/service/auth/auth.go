// Package auth authenticates bearer tokens and authorizes what their
// principals do. Tokens are random, shown once, and stored only as SHA-256
// hashes; a principal's grants on the resource tree (/tasks/ID, /sweepers/ID,
// /processes/KIND, /objects/ID) say what it may do, and Service.Check is
// the one place that decides it for the API, the MCP tools and the studio.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
)

// Permissions on the resource tree (DESIGN.md §10). Retry (issue 24) opens a
// FAILED or CANCELLED task again (retry_task): a permission of its own, as
// stop and start are, since it undoes a verdict and spends new attempts.
const (
	PermRead    = "read"
	PermAppend  = "append"
	PermCreate  = "create"
	PermUpdate  = "update"
	PermStop    = "stop"
	PermStart   = "start"
	PermCancel  = "cancel"
	PermRetry   = "retry"
	PermControl = "control"
	PermAdmin   = "admin"
)

const (
	tokenPrefix = "cks_"
	tokenBytes  = 32
)

// ErrUnauthenticated means the request carried no valid token.
var ErrUnauthenticated = errors.New("unauthenticated")

// NewToken returns a fresh random bearer token.
func NewToken() (string, error) { return newSecret(tokenPrefix) }

// newSecret returns prefix and tokenBytes random bytes in base64url.
func newSecret(prefix string) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random secret: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// wellFormed reports whether secret is prefix and tokenBytes bytes in
// base64url, as newSecret makes it.
func wellFormed(secret, prefix string) bool {
	rest, ok := strings.CutPrefix(secret, prefix)
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return ok && err == nil && len(b) == tokenBytes
}

// HashToken returns the stored form of a token.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// checkFormat reports whether tok has the shape NewToken produces.
func checkFormat(tok string) error {
	if tok == "" {
		return fmt.Errorf("missing token: expected an Authorization: Bearer %s… header: %w", tokenPrefix, ErrUnauthenticated)
	}
	if !wellFormed(tok, tokenPrefix) {
		return fmt.Errorf("malformed token: expected %q followed by %d base64url characters: %w",
			tokenPrefix, base64.RawURLEncoding.EncodedLen(tokenBytes), ErrUnauthenticated)
	}
	return nil
}

// Authenticate returns the principal tok belongs to. Every failure matches
// ErrUnauthenticated and says whether the token was missing, malformed or
// unknown (a claim's credential whose lease has ended is unknown).
func (s *Service) Authenticate(ctx context.Context, tok string) (cks.Principal, error) {
	p, _, err := s.AuthenticateWithGrants(ctx, tok)
	return p, err
}

// AuthenticateWithGrants is Authenticate that also returns the principal's
// grants, read with it in one statement (or from the token cache, see
// cache.go): what a request checks its permissions against
// (WithPrincipalGrants), so that an authenticated request reads the
// database once at most. The grants are shared: not to be modified.
func (s *Service) AuthenticateWithGrants(ctx context.Context, tok string) (cks.Principal, []cks.Grant, error) {
	p, grants, err := s.tokenAuth(ctx, tok)
	if errors.Is(err, cks.ErrNotFound) {
		// Also the credential of a claim whose lease has ended.
		return p, nil, fmt.Errorf("unknown token (or the lease it was issued for has ended): %w", ErrUnauthenticated)
	}
	return p, grants, err
}

// tokenAuth reads the principal and grants of tok: a task's agent token's
// from its task (taskAuth), any other's from its principal
// (principalAuth), once its shape is checked.
func (s *Service) tokenAuth(ctx context.Context, tok string) (cks.Principal, []cks.Grant, error) {
	if id, secret, ok := parseTaskToken(tok); ok {
		return s.taskAuth(ctx, id, secret)
	}
	if err := checkFormat(tok); err != nil {
		return cks.Principal{}, nil, err
	}
	return s.principalAuth(ctx, HashToken(tok))
}

// EnsureAdminToken makes the data directory's token file hold a valid admin
// token for this database. If the file is missing, or its token is unknown to
// the database (a fresh database), a new admin principal is created, only its
// hash is stored, and the token is written with mode 0600. It reports whether a
// token was created.
func EnsureAdminToken(ctx context.Context, s *Service, dir datadir.Dir, c clock.Clock) (bool, error) {
	if tok, err := dir.ReadToken(); err == nil && checkFormat(tok) == nil {
		_, err := s.PrincipalByTokenHash(ctx, HashToken(tok))
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, cks.ErrNotFound) {
			return false, err
		}
	}
	tok, err := NewToken()
	if err != nil {
		return false, err
	}
	p := cks.Principal{ID: uuid.NewString(), Name: "admin", CreatedAt: c.Now()}
	if err := s.CreatePrincipal(ctx, p, HashToken(tok), []cks.Grant{{Resource: "/", Permission: PermAdmin}}); err != nil {
		return false, fmt.Errorf("auth: create admin principal: %w", err)
	}
	if err := dir.WriteToken(tok); err != nil {
		return false, fmt.Errorf("auth: write %s: %w", dir.TokenFile(), err)
	}
	return true, nil
}

package auth

import (
	"context"
	"sync"
)

// A credential is checked when its request arrives; a stream (the event
// stream, an MCP session's GET stream) lives on after that check. So that a
// revoked token or a signed-out session stops receiving at once, the
// request records how to check its credential again (WithCredentialCheck),
// and a stream checks it again whenever this process revokes something
// (Revoked) and on each of its keep-alives (revocations made by another
// process sharing the database).

// revocations broadcasts this process's revocations: ch is closed at the
// next one and replaced.
type revocations struct {
	mu sync.Mutex
	ch chan struct{}
}

// Revoked returns a channel closed at the next revocation made through s:
// a principal deleted (its token revoked), a studio session deleted or
// signed out. Call it again after it fires for the one after. A credential
// that ends by itself — a claim's at the end of its lease, a session at its
// expiry — stops authenticating without one: a stream sees it at its next
// keep-alive, as it sees another process's revocations.
func (s *Service) Revoked() <-chan struct{} {
	s.revoked.mu.Lock()
	defer s.revoked.mu.Unlock()
	if s.revoked.ch == nil {
		s.revoked.ch = make(chan struct{})
	}
	return s.revoked.ch
}

// noteRevoked wakes whoever waits on Revoked.
func (s *Service) noteRevoked() {
	s.revoked.mu.Lock()
	defer s.revoked.mu.Unlock()
	if s.revoked.ch != nil {
		close(s.revoked.ch)
		s.revoked.ch = nil
	}
}

type credentialKey struct{}

// WithCredentialCheck returns ctx carrying check, which authenticates the
// request's credential again (a bearer token, a session cookie) and
// answers an error matching ErrUnauthenticated once it no longer
// authenticates.
func WithCredentialCheck(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, credentialKey{}, check)
}

// CheckCredential authenticates the credential of ctx's request again
// (WithCredentialCheck): nil while it still authenticates, or when ctx
// records none (the local operator, a surface mounted without
// authentication).
func CheckCredential(ctx context.Context) error {
	if check, ok := ctx.Value(credentialKey{}).(func(context.Context) error); ok {
		return check(ctx)
	}
	return nil
}

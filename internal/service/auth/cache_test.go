package auth_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/waitfor"
)

// authReads is a driver that counts the reads that authenticate a token.
type authReads struct {
	driver.Driver
	n atomic.Int64
}

func (a *authReads) Executor() driver.Executor { return authReadsExec{a.Driver.Executor(), &a.n} }

type authReadsExec struct {
	driver.Executor
	n *atomic.Int64
}

func (e authReadsExec) PrincipalAuth(ctx context.Context, tokenHash string) (driver.PrincipalAuthRow, error) {
	e.n.Add(1)
	return e.Executor.PrincipalAuth(ctx, tokenHash)
}

// TestTokenCache: a hub authenticates a token from memory once its change
// listener is connected (no read of the database for it), and a revocation
// reaches it — this hub's before DeletePrincipal returns, another
// process's through the change notification (the fake clock never reaches
// the entry's TTL, so only the notification can end it) — and an entry
// is read again after TokenCacheTTL. Both backends.
func TestTokenCache(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		ctx := context.Background()
		clk := clock.NewFake(backendtest.T0)
		other, _ := backendtest.Store(t, open, driver.WithClock(clk)) // another hub on the database
		reads := &authReads{Driver: open(t, driver.WithClock(clk))}
		hub := backend.New(reads, driver.WithClock(clk))
		t.Cleanup(func() { hub.Close() })

		tokens := map[string]string{}
		for _, id := range []string{"a", "b", "c"} {
			tok, err := auth.NewToken()
			if err != nil {
				t.Fatal(err)
			}
			tokens[id] = tok
			if err := other.Principals.CreatePrincipal(ctx, cks.Principal{ID: id, Name: id, CreatedAt: backendtest.T0},
				auth.HashToken(tok), []cks.Grant{{Resource: auth.ResourceTasks, Permission: auth.PermRead}}); err != nil {
				t.Fatal(err)
			}
		}
		authenticate := func(id string) error {
			p, grants, err := hub.Principals.AuthenticateWithGrants(ctx, tokens[id])
			if err == nil && (p.ID != id || len(grants) != 1 || grants[0].Resource != auth.ResourceTasks) {
				t.Fatalf("token of %s authenticated %+v %v", id, p, grants)
			}
			return err
		}
		// Live once the listener is connected: then a token read once is
		// served from memory.
		waitfor.Until(t, "a token served from the cache", func() bool {
			if authenticate("a") != nil {
				t.Fatal("token a refused")
			}
			before := reads.n.Load()
			return authenticate("a") == nil && reads.n.Load() == before
		})
		before := reads.n.Load()
		for range 100 {
			if err := cmpNil(authenticate("a"), authenticate("b")); err != nil {
				t.Fatal(err)
			}
		}
		if n := reads.n.Load() - before; n != 1 {
			t.Fatalf("200 authentications of two cached tokens read the database %d times, want 1 (b's first)", n)
		}

		// This hub's revocation: refused at once.
		if err := hub.Principals.DeletePrincipal(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if err := authenticate("b"); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("b after its revocation on this hub: %v, want unauthenticated at once", err)
		}
		// Another hub's: refused once its notification arrives.
		if err := authenticate("a"); err != nil {
			t.Fatal(err)
		}
		if err := other.Principals.DeletePrincipal(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, "another hub's revocation to reach the cache", func() bool {
			return errors.Is(authenticate("a"), auth.ErrUnauthenticated)
		})

		// An entry is read again after TokenCacheTTL.
		waitfor.Until(t, "c served from the cache", func() bool {
			if authenticate("c") != nil {
				t.Fatal("token c refused")
			}
			before := reads.n.Load()
			return authenticate("c") == nil && reads.n.Load() == before
		})
		clk.Advance(auth.TokenCacheTTL)
		before = reads.n.Load()
		if err := authenticate("c"); err != nil || reads.n.Load() != before+1 {
			t.Fatalf("c after the TTL: %v, %d reads, want read again", err, reads.n.Load()-before)
		}
	})
}

func cmpNil(errs ...error) error { return errors.Join(errs...) }

package api_test

import (
	"bufio"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/surface/api"
)

// TestEventStreamEndsAtRevocation (issue 38, finding 9): /v1/events opened
// with a bearer token ends once the token is revoked, and one opened with a
// studio session cookie once the session signs out — not at the client's
// leisure. Nothing but keep-alives comes after the revocation.
func TestEventStreamEndsAtRevocation(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		// open returns how to authenticate the stream and the revocation.
		open func(t *testing.T) (func(*http.Request), func() error)
	}{
		{"bearer token revoked", func(t *testing.T) (func(*http.Request), func() error) {
			p, tok, err := auth.CreateToken(context.Background(), f.store.Principals, f.clock, "reader",
				[]cks.Grant{{Resource: auth.ResourceRoot, Permission: auth.PermRead}})
			if err != nil {
				t.Fatal(err)
			}
			return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) },
				func() error { return f.store.Principals.DeletePrincipal(context.Background(), p.ID) }
		}},
		{"studio session signed out", func(t *testing.T) (func(*http.Request), func() error) {
			c := f.login(t, f.token)
			return func(r *http.Request) {
					r.AddCookie(&http.Cookie{Name: api.CookieName, Value: c.Value})
					r.Header.Set("Sec-Fetch-Site", "same-origin")
				}, func() error {
					resp, _ := f.withCookie(t, "POST", "/logout", c.Value)
					if resp.StatusCode >= 400 {
						t.Fatalf("logout: %d", resp.StatusCode)
					}
					return nil
				}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authn, revoke := tc.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/v1/events", nil)
			authn(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /v1/events: %d", resp.StatusCode)
			}
			lines := bufio.NewScanner(resp.Body)
			if !lines.Scan() || lines.Text() != ": connected" {
				t.Fatalf("the stream opened with %q", lines.Text())
			}
			if err := revoke(); err != nil {
				t.Fatal(err)
			}
			for lines.Scan() {
				if l := lines.Text(); l != "" && l != ": keep-alive" {
					t.Fatalf("the stream delivered %q after its credential was revoked", l)
				}
			}
			if ctx.Err() != nil {
				t.Fatal("the stream was still open 20s after its credential was revoked")
			}
		})
	}
}

package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
)

// TestAuthorizationDiscovery: a 401 names, in WWW-Authenticate, the
// protected-resource metadata of what was asked for (/mcp's for /mcp), which
// is public JSON naming that resource and the header a bearer token goes in;
// the OAuth and OpenID documents a client may probe next, and any other
// /.well-known/ path, are a JSON 404 — never the studio's login redirect.
func TestAuthorizationDiscovery(t *testing.T) {
	f := newHubFixture(t, backendtest.SQLite(t))
	base := f.srv.URL
	unknown, _ := auth.NewToken()

	t.Run("challenge", func(t *testing.T) {
		for _, c := range []struct {
			name, method, path, token, meta string
			invalid                         bool
		}{
			{"mcp without token", "POST", "/mcp", "", "/.well-known/oauth-protected-resource/mcp", false},
			{"mcp with an unknown token", "POST", "/mcp", unknown, "/.well-known/oauth-protected-resource/mcp", true},
			{"api without token", "GET", "/v1/tasks", "", "/.well-known/oauth-protected-resource", false},
			{"metrics with a malformed token", "GET", "/metrics", "nonsense", "/.well-known/oauth-protected-resource", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				resp, body := f.send(t, request{method: c.method, path: c.path, bearer: c.token, contentType: "application/json",
					body: strings.NewReader(`{}`)})
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", resp.StatusCode, body)
				}
				h := resp.Header
				decodeError(t, body)
				chs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
				if err != nil || len(chs) != 1 {
					t.Fatalf("WWW-Authenticate %q: %v %+v, want one challenge", h.Values("WWW-Authenticate"), err, chs)
				}
				ch := chs[0]
				if ch.Scheme != "bearer" || ch.Params["realm"] != "cks" || ch.Params["resource_metadata"] != base+c.meta {
					t.Errorf("challenge %+v, want Bearer realm=cks resource_metadata=%s", ch, base+c.meta)
				}
				if got := ch.Params["error"]; (got == "invalid_token") != c.invalid || (!c.invalid && got != "") {
					t.Errorf("error=%q; want invalid_token exactly when a credential was presented (%v)", got, c.invalid)
				}
			})
		}
	})

	t.Run("metadata", func(t *testing.T) {
		for _, c := range []struct{ path, resource string }{
			{"/.well-known/oauth-protected-resource", base},
			{"/.well-known/oauth-protected-resource/mcp", base + "/mcp"},
		} {
			resp, body := f.get(t, c.path, "")
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("GET %s: %d %s %s, want 200 JSON", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var m oauthex.ProtectedResourceMetadata
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("GET %s: %v: %s", c.path, err, body)
			}
			if m.Resource != c.resource || len(m.BearerMethodsSupported) != 1 || m.BearerMethodsSupported[0] != "header" ||
				len(m.AuthorizationServers) != 0 {
				t.Errorf("GET %s = %+v, want resource %s, bearer in the header, no authorization server", c.path, m, c.resource)
			}
			// What the SDK's client reads, it reads without error.
			got, err := oauthex.GetProtectedResourceMetadata(t.Context(), base+c.path, c.resource, http.DefaultClient)
			if err != nil || got.Resource != c.resource {
				t.Errorf("the SDK's GetProtectedResourceMetadata(%s): %+v %v", c.path, got, err)
			}
		}
		resp, body := f.send(t, request{method: "POST", path: "/.well-known/oauth-protected-resource"})
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" ||
			decodeError(t, body).Error.Code != "method_not_allowed" {
			t.Errorf("POST to the metadata: %d Allow %q %s, want a JSON 405", resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	})

	t.Run("no authorization server", func(t *testing.T) {
		for _, path := range []string{
			"/.well-known/oauth-authorization-server",
			"/.well-known/oauth-authorization-server/mcp",
			"/.well-known/openid-configuration",
			"/mcp/.well-known/openid-configuration",
			"/.well-known/anything",
		} {
			resp, body := f.get(t, path, "")
			if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("GET %s: %d %s %q, want a JSON 404", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
				continue
			}
			if e := decodeError(t, body); e.Error.Code != "not_found" || !strings.Contains(e.Error.Message, "cks token create") {
				t.Errorf("GET %s: %+v, want not_found saying where tokens come from", path, e)
			}
		}
	})
}

package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/cks-dev/cks"
)

// Authorization discovery (RFC 9728; the MCP authorization spec). A client
// that meets a 401 learns from its WWW-Authenticate header where the
// protected-resource metadata of what it asked for is, and reads it there as
// JSON, without a token: the resource it names and that a bearer token goes
// in the Authorization header. The metadata names no authorization server: a
// hub runs none, its tokens are made by `cks token create` (or are the data
// directory's admin token), so a client is given one rather than sent to an
// OAuth flow. Every other /.well-known/ document (oauth-authorization-server,
// openid-configuration, …) is a JSON 404, never the studio's login page.

// wellKnown is the prefix of the discovery documents (RFC 8615).
const wellKnown = "/.well-known/"

// protectedResourcePath is the protected-resource metadata of the hub as a
// whole; with a resource's path appended (/mcp), that resource's.
const protectedResourcePath = wellKnown + "oauth-protected-resource"

// routeDiscovery mounts the discovery documents, public, on a.mux.
func (a *API) routeDiscovery() {
	a.mux.Handle(protectedResourcePath, protectedResource(""))
	if a.cfg.MCP != nil {
		a.mux.Handle(protectedResourcePath+mcpPath, protectedResource(mcpPath))
	}
	none := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, cks.CodeNotFound, "no such document: "+r.URL.Path+
			"; a cks hub runs no OAuth authorization server: it takes bearer tokens made with `cks token create` "+
			"(Authorization: Bearer TOKEN), and "+protectedResourcePath+" describes them")
	})
	a.mux.Handle(wellKnown, none)
	// An OpenID client appends the well-known path to the issuer's path
	// instead (/mcp/.well-known/openid-configuration).
	a.mux.Handle(mcpPath+wellKnown, none)
}

// protectedResource serves the metadata of the resource at path ("" the hub
// itself) on the URL the request came to.
func protectedResource(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteError(w, http.StatusMethodNotAllowed, cks.CodeMethodNotAllowed,
				fmt.Sprintf("%s %s: the metadata is read with GET", r.Method, r.URL.Path))
			return
		}
		// Public information, readable by a page of any origin (as the
		// SDK's handler does); no preflight is approved, none is needed.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		name := "cks hub"
		if path == mcpPath {
			name = "cks hub MCP endpoint"
		}
		writeJSON(w, http.StatusOK, oauthex.ProtectedResourceMetadata{
			Resource:               originOf(r) + path,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           name,
		})
	})
}

// challenge is the WWW-Authenticate header of a 401 to r: a bearer token in
// realm cks, and where the metadata of the resource asked for is (/mcp's
// for /mcp, the hub's for everything else). error="invalid_token" when r
// presented a credential that is no valid one (RFC 6750 §3.1).
func challenge(r *http.Request) string {
	meta := originOf(r) + protectedResourcePath
	if r.URL.Path == mcpPath || strings.HasPrefix(r.URL.Path, mcpPath+"/") {
		meta += mcpPath
	}
	h := `Bearer realm="cks"`
	if presentsCredential(r) {
		h += `, error="invalid_token"`
	}
	return h + `, resource_metadata="` + meta + `"`
}

// originOf is the scheme and host r was sent to: this hub's origin as its
// client sees it.
func originOf(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

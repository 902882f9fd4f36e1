package api

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Request hygiene: every request passes admit before the mux routes it, so
// the rules below hold on every endpoint, authenticated or not, including
// /mcp and the studio's /login.
//
//   - Cross-site request forgery. A browser sends the studio's cookie with
//     every request to the hub's host, also from a page on another port of
//     127.0.0.1 or localhost (same site, so SameSite=Strict does not stop
//     it). An unsafe request (anything but GET, HEAD, OPTIONS) that would be
//     authenticated by that cookie — it carries the cookie and no
//     Authorization header — and every POST to /login and /logout must
//     therefore prove it comes from the hub's own pages: Sec-Fetch-Site:
//     same-origin, or, from a browser that sends no fetch metadata, an
//     Origin equal to the hub's own scheme://host. Else 403 cross_origin.
//     Bearer requests need no proof: a page cannot make a browser send an
//     Authorization header to another origin without a CORS preflight,
//     which the hub never approves. Every browser that honours SameSite
//     sends Origin on a POST, so no CSRF token (state the hub would keep,
//     and that the plain login form could not send without script) is
//     needed on top.
//   - Content types. A /v1 request with a body must declare it
//     application/json (415 otherwise): the form encodings (urlencoded,
//     multipart, text/plain), the only ones a cross-site form can send
//     without a preflight, are never read as JSON.
//     A body-less call (start, a sweeper's stop) needs no Content-Type; one
//     that declares a form type is refused all the same.
//   - Size. A body is read whole, up to ops.MaxBody (1 MiB), before the handler
//     runs: a larger one is 413 request_too_large and nothing is done with
//     it (a handler never sees a cut body). It is read only once the
//     request is authenticated (on the headers alone): a request without a
//     valid token gets its 401 at once, however slowly its body arrives,
//     and its connection is closed rather than drained.
//   - Origin on /mcp. A request to /mcp that a browser sent (it carries
//     Origin or Sec-Fetch-Site) must come from the hub's own origin, bearer
//     or not, on every method: else 403 cross_origin. Clients that are no
//     browser send neither header and are not affected.
//   - Shape. A /v1 body is a JSON object: null (which decodes into a struct
//     without error), arrays and scalars are 400 — from the operation's
//     check of its input (ops.Call), once the caller may call it.

// safeMethod reports whether m is a method that changes nothing (RFC 9110).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := crossOrigin(r); err != nil {
		hint := "; a request signed in by the studio cookie must come from the hub's own pages" +
			" (a script or another site sends the token as \"Authorization: Bearer TOKEN\" instead)"
		if r.URL.Path == mcpPath {
			hint = "; /mcp answers the hub's own pages and clients that send no Origin (DNS rebinding)"
		}
		WriteError(w, http.StatusForbidden, cks.CodeCrossOrigin, "cross-origin request refused: "+err.Error()+hint)
		return
	}
	if safeMethod(r.Method) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, ops.MaxBody)
		}
		a.mux.ServeHTTP(w, r)
		return
	}
	if !a.admit(w, r) {
		return
	}
	if r.URL.Path == "/login" || r.URL.Path == "/logout" {
		// The public unsafe routes: nobody to authenticate first.
		var ok bool
		if r, ok = a.readBody(w, r); !ok {
			return
		}
	} else if r.ContentLength != 0 {
		// The body is read once the request is authenticated (readBody,
		// from requireAuth): an answer given before that (401, 404, 405)
		// closes the connection instead of waiting for a body nobody
		// reads. readBody lifts it.
		w.Header().Set("Connection", "close")
	}
	a.mux.ServeHTTP(w, r)
}

// mcpPath is where the MCP endpoint is mounted.
const mcpPath = "/mcp"

// crossOrigin returns why r is refused as a cross-origin request, or nil:
// an unsafe request a page of another origin could make with the hub's
// credentials (needsOriginProof), and every request to /mcp that a browser
// sent (it carries Origin or Sec-Fetch-Site; the MCP streamable HTTP
// transport has the server validate Origin on every request), must come
// from the hub's own origin (sameOrigin).
func crossOrigin(r *http.Request) error {
	switch {
	case r.URL.Path == mcpPath && (r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != ""):
	case !safeMethod(r.Method) && needsOriginProof(r):
	default:
		return nil
	}
	return sameOrigin(r)
}

// admit applies the header rules above to an unsafe request (its content
// type, its declared size), or answers it and returns false. Nothing of the
// body is read: readBody does that, after authentication.
func (a *API) admit(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(r.URL.Path, "/v1/") && ct != "" && !isJSON(ct) {
		writeUnsupported(w, fmt.Sprintf("Content-Type %q", ct))
		return false
	}
	if r.ContentLength > ops.MaxBody {
		writeTooLarge(w, r)
		return false
	}
	return true
}

// readBody reads the body of an unsafe request into memory, checking its
// size and, under /v1, that it declares its type, and returns the request
// with it; or it answers the request and returns false. What the body
// holds is the operation's to judge (ops.Call), once the caller may call
// it. A safe request is returned as it
// is.
func (a *API) readBody(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if safeMethod(r.Method) {
		return r, true
	}
	w.Header().Del("Connection") // the body is read: the connection may serve another request
	api := strings.HasPrefix(r.URL.Path, "/v1/")
	var b []byte
	if r.Body != nil {
		var err error
		b, err = io.ReadAll(http.MaxBytesReader(w, r.Body, ops.MaxBody))
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeTooLarge(w, r)
			return r, false
		}
		if err != nil {
			// The client went away or was too slow (the server's read
			// timeout): the answer most likely goes nowhere.
			a.cfg.Logger.Debug("request body unread", "method", r.Method, "path", r.URL.Path, "err", err)
			WriteError(w, http.StatusBadRequest, cks.CodeInvalidArgument, "cannot read the request body: "+err.Error())
			return r, false
		}
		r.Body.Close()
	}
	if api && len(bytes.TrimSpace(b)) > 0 && r.Header.Get("Content-Type") == "" {
		writeUnsupported(w, "a body without a Content-Type")
		return r, false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return r, true
}

// needsOriginProof reports whether r is a request a page of another origin
// could make a browser send with the hub's credentials: one the studio
// cookie would authenticate, or a sign-in or sign-out.
func needsOriginProof(r *http.Request) bool {
	if r.URL.Path == "/login" || r.URL.Path == "/logout" {
		return true
	}
	if r.Header.Get("Authorization") != "" {
		return false // principalOf uses the header, never the cookie
	}
	_, err := r.Cookie(CookieName)
	return err == nil
}

// sameOrigin checks that a browser sent r from the hub's own origin. A
// reverse proxy terminating TLS breaks the Origin comparison (the hub sees
// http), but such browsers send Sec-Fetch-Site, which decides first.
func sameOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin":
		return nil
	case "":
	default:
		return fmt.Errorf("Sec-Fetch-Site is %q, not same-origin", site)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return errors.New("it carries neither Sec-Fetch-Site nor Origin")
	}
	if self := originOf(r); !strings.EqualFold(origin, self) {
		return fmt.Errorf("Origin %q is not this hub's %q", origin, self)
	}
	return nil
}

// isJSON reports whether a Content-Type names application/json (parameters
// such as charset allowed).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func writeUnsupported(w http.ResponseWriter, what string) {
	WriteError(w, http.StatusUnsupportedMediaType, cks.CodeUnsupportedMediaType,
		what+" is not accepted: the request body must be JSON, sent as Content-Type: application/json")
}

func writeTooLarge(w http.ResponseWriter, r *http.Request) {
	WriteError(w, http.StatusRequestEntityTooLarge, cks.CodeRequestTooLarge,
		fmt.Sprintf("request body of %s %s is too large: limit 1 MiB (%d bytes)", r.Method, r.URL.Path, ops.MaxBody))
}

// clearDeadlines lifts the server's read and write timeouts for a streaming
// response (the event stream, /mcp), which lives as long as its client.
func clearDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})  //nolint:errcheck // unsupported by test recorders: nothing to lift
	rc.SetWriteDeadline(time.Time{}) //nolint:errcheck
}

// streaming serves h with the server's timeouts lifted.
func streaming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clearDeadlines(w)
		h.ServeHTTP(w, r)
	})
}

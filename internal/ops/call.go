package ops

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/cks-dev/cks/internal/service/auth"
)

// Request is an operation's input as a surface received it, not yet
// decoded.
type Request struct {
	// Args is the input's JSON object: the MCP arguments, or the HTTP body.
	Args []byte
	// PathValue, over HTTP, gives each path wildcard's value, and Query
	// is the query (HTTPInput); with PathValue nil, Args is the whole
	// input (Decode).
	PathValue func(string) string
	Query     url.Values
	// Header, over HTTP, reads a request header (the operation's
	// Spec.Headers); nil elsewhere.
	Header func(string) string
	// Ready, when set, runs with the checked input just before the call
	// (the HTTP surface extends its write deadline by op.Wait(in)).
	Ready func(in any)
}

// Call is how a surface calls op on req: admit, then the call.
func Call(ctx context.Context, s *Services, op Operation, req Request) (any, error) {
	in, checked, err := admit(ctx, s, op, req)
	if err != nil {
		return nil, err
	}
	if req.Ready != nil {
		req.Ready(in)
	}
	return op.invoke(ctx, s, in, checked)
}

// admit is everything a call does before it reaches the services, in one
// pass over req, and the one place its refusals come from. The caller's
// permission is checked first, on what req names before it is decoded or
// validated (gate) — over HTTP from the path values alone when they name
// the resource — so a caller without it learns nothing of the input's
// rules (an unknown field, a wrong type, text no store takes, a list too
// long), only that it is forbidden. Then the input is decoded once
// (decode: its lists counted against their bounds before it is), what the
// operation needs beyond its permission is checked, and the input is
// validated once (validate). It returns the input and the resource gate
// checked ("" for none); the call checks the permission again only when
// the input names another.
func admit(ctx context.Context, s *Services, op Operation, req Request) (any, string, error) {
	var sc *scan
	if (req.PathValue == nil || !op.Route().Bodyless()) && !resourceOfPath(op, req) {
		sc = scanInput(inputType(op), req.Args)
	}
	checked, err := gate(ctx, s, op, req, sc)
	if err != nil {
		return nil, "", err
	}
	in, sent, err := decode(op, req, sc)
	if err != nil {
		return nil, "", err
	}
	if err := op.admitInput(ctx, s, in, sent); err != nil {
		return nil, "", err
	}
	return in, checked, nil
}

// resourceOfPath reports whether op's resource is known without its body:
// a fixed one, or over HTTP one whose every field is a path value.
func resourceOfPath(op Operation, req Request) bool {
	if op.ownResource() {
		return false
	}
	fields := Wildcards(op.Spec().Resource)
	if req.PathValue == nil {
		return len(fields) == 0
	}
	path := Wildcards(op.Spec().Path)
	return !slices.ContainsFunc(fields, func(f string) bool { return !slices.Contains(path, f) })
}

// gate checks that the caller may call op on req at all, and returns the
// resource it checked ("" when req names none). The resource is the one
// op's input would have as far as req can be read leniently (sc's draft:
// unknown fields ignored, a field of the wrong type left zero); when that
// names none (a missing or malformed id, a body that is not JSON), the
// caller must hold the permission somewhere under the resource template's
// fixed part (auth.RequireWithin), and a refusal names the template.
func gate(ctx context.Context, s *Services, op Operation, req Request, sc *scan) (string, error) {
	sp := op.Spec()
	if in, ok := draft(op, req, sc); ok {
		if res, err := op.Resource(ctx, s, in); err == nil {
			return res, auth.Require(ctx, sp.Permission, res)
		}
	}
	fixed, _, _ := strings.Cut(sp.Resource, "/{")
	if fixed == "" {
		fixed = auth.ResourceRoot
	}
	err := auth.RequireWithin(ctx, sp.Permission, fixed)
	if fe, ok := errors.AsType[*auth.ForbiddenError](err); ok {
		fe.Resource = sp.Resource
	}
	return "", err
}

// draft is op's input as far as gate reads it, and whether it tells the
// resource: sc's draft of the JSON text (when gate needs the body), with
// (over HTTP) the path values.
func draft(op Operation, req Request, sc *scan) (any, bool) {
	sp := op.Spec()
	in, ok := op.NewInput(), true
	if sc != nil {
		in, ok = sc.draft, sc.draftOK
	}
	if req.PathValue != nil {
		path := Wildcards(sp.Path)
		for _, name := range path {
			_ = setText(in, name, req.PathValue(name), true) // a malformed one stays zero: no resource
		}
		ok = ok || resourceOfPath(op, req)
	}
	return in, ok
}

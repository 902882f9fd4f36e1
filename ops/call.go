package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/cks-dev/cks/auth"
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
	// Check, when set, runs once the caller is known to hold the
	// operation's permission, before the input is decoded (the HTTP
	// surface's check of path and query text).
	Check func() error
	// Ready, when set, runs with the decoded input just before the call
	// (the HTTP surface extends its write deadline by op.Wait(in)).
	Ready func(in any)
}

// Call is how a surface calls op on req. The caller's permission is
// checked first, on what req names before it is decoded or validated
// (gate), so a caller without it learns nothing of the input's rules — an
// unknown field, a wrong type, text no store takes — only that it is
// forbidden. Then the input is decoded and checked, and op is invoked, with
// the permission checked again only when the decoded input names another
// resource than the one gate checked.
func Call(ctx context.Context, s *Services, op Operation, req Request) (any, error) {
	checked, err := gate(ctx, s, op, req)
	if err != nil {
		return nil, err
	}
	if req.Check != nil {
		if err := req.Check(); err != nil {
			return nil, err
		}
	}
	var in any
	if req.PathValue != nil {
		in, err = HTTPInput(op, req.PathValue, req.Query, req.Args)
	} else {
		in = op.NewInput()
		err = Decode(req.Args, in)
	}
	if err != nil {
		return nil, err
	}
	if req.Ready != nil {
		req.Ready(in)
	}
	return op.invoke(ctx, s, in, checked)
}

// gate checks that the caller may call op on req at all, and returns the
// resource it checked ("" when req names none). The resource is the one
// op's input would have as far as req can be read leniently (unknown fields
// ignored, a field of the wrong type left zero); when that names none (a
// missing or malformed id, a body that is not JSON), the caller must hold
// the permission somewhere under the resource template's fixed part
// (auth.RequireWithin), and a refusal names the template.
func gate(ctx context.Context, s *Services, op Operation, req Request) (string, error) {
	sp := op.Spec()
	if in, ok := draft(op, req); ok {
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

// draft is op's input read leniently from req, and whether it tells the
// resource: its Args are a JSON value, or (over HTTP) every field of the
// resource template is a path value.
func draft(op Operation, req Request) (any, bool) {
	sp := op.Spec()
	in, ok := op.NewInput(), true
	if req.PathValue == nil || !op.Route().Bodyless() {
		if args := bytes.TrimSpace(req.Args); len(args) > 0 {
			if err := json.Unmarshal(args, in); err != nil {
				if _, typeErr := errors.AsType[*json.UnmarshalTypeError](err); !typeErr {
					ok = false
				}
			}
		}
	}
	if req.PathValue != nil {
		path := Wildcards(sp.Path)
		for _, name := range path {
			_ = setText(in, name, req.PathValue(name), true) // a malformed one stays zero: no resource
		}
		fields := Wildcards(sp.Resource)
		ok = ok || len(fields) > 0 && !slices.ContainsFunc(fields, func(f string) bool { return !slices.Contains(path, f) })
	}
	return in, ok
}

package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/store"
)

// Route is one authenticated endpoint of the API with the permission it needs.
// Every endpoint is registered through this table, so the table is the whole
// access policy of the API (and the ACL matrix test iterates it).
type Route struct {
	// Pattern is the ServeMux pattern, e.g. "POST /v1/tasks/{id}/cancel".
	Pattern string `json:"pattern"`
	// Permission is what the caller must hold (or admin) on Resource.
	Permission string `json:"permission"`
	// Resource is a template: {id} and {kind} stand for the path values.
	// POST /v1/tasks is the one exception: a body with parent_id P needs
	// create on /tasks/P instead of /tasks (so a task-scoped agent
	// credential can create children of its own task).
	Resource string `json:"resource"`

	handler    http.Handler
	resourceOf func(*http.Request) (string, error) // overrides Resource when set
}

// Routes returns every authenticated endpoint this API serves, in
// registration order. /mcp is not among them: each MCP tool checks its own
// permission.
func (a *API) Routes() []Route { return append([]Route(nil), a.routes...) }

// route registers pattern behind authentication and the permission check.
func (a *API) route(pattern, perm, resource string, h http.Handler) {
	a.addRoute(Route{Pattern: pattern, Permission: perm, Resource: resource, handler: h})
}

func (a *API) addRoute(rt Route) {
	a.routes = append(a.routes, rt)
	a.mux.Handle(rt.Pattern, a.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkRequestText(rt.Pattern, r)
		var res string
		if err == nil {
			res, err = rt.resource(r)
		}
		if err == nil {
			err = auth.Require(r.Context(), rt.Permission, res)
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		rt.handler.ServeHTTP(w, r)
	})))
}

// resource expands the Resource template with r's path values. A path value
// holding a "/" (escaped in the URL) would name another node, so it is refused.
func (rt Route) resource(r *http.Request) (string, error) {
	if rt.resourceOf != nil {
		return rt.resourceOf(r)
	}
	res := rt.Resource
	for _, name := range []string{"id", "kind"} {
		ph := "{" + name + "}"
		if !strings.Contains(res, ph) {
			continue
		}
		v := r.PathValue(name)
		if v == "" || strings.Contains(v, "/") {
			return "", &store.FieldError{Field: name, Expected: fmt.Sprintf("a single path segment, got %q", v)}
		}
		res = strings.ReplaceAll(res, ph, v)
	}
	return res, nil
}

// createResource is the resource of POST /v1/tasks: /tasks/P for a body
// with parent_id P, else /tasks. It reads the body and puts it back for the
// handler; a body it cannot read as JSON is /tasks (the handler refuses it).
func createResource(r *http.Request) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return "", fmt.Errorf("read request body: %w", store.ErrInvalid)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var n struct {
		ParentID *int64 `json:"parent_id"`
	}
	if json.Unmarshal(b, &n) == nil && n.ParentID != nil && *n.ParentID > 0 {
		return auth.TaskResource(*n.ParentID), nil
	}
	return auth.ResourceTasks, nil
}

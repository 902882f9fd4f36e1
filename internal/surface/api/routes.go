package api

import (
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// Route is one authenticated endpoint of the API with the permission it
// needs. Every route is an operation of the table (package ops), so the table
// is the whole access policy of the API (and the ACL matrix test iterates it).
type Route struct {
	// Operation is the name of the operation served.
	Operation string `json:"operation"`
	// Pattern is the ServeMux pattern, e.g. "POST /v1/tasks/{task_id}/cancel".
	Pattern string `json:"pattern"`
	// Permission is what the caller must hold (or admin) on Resource.
	Permission string `json:"permission"`
	// Resource is a template: {field} stands for the input field of that
	// name (a path value). POST /v1/tasks is the one exception: a body with
	// parent_id P needs create on /tasks/P instead of /tasks (so a
	// task-scoped agent credential can create children of its own task).
	Resource string `json:"resource"`
}

// Routes returns every authenticated endpoint this API serves, in table
// order. /mcp is not among them: each MCP tool checks its own permission
// (the same operation's).
func (a *API) Routes() []Route { return append([]Route(nil), a.routes...) }

// routeOps registers every HTTP operation the services offer: the
// request/response ones through the one adapter serveOp, the streams through
// their handlers in streams (a stream without one is a bug of the table).
func (a *API) routeOps(streams map[string]http.Handler) {
	for _, op := range ops.Available(ops.All(), ops.HTTP, a.svc) {
		sp := op.Spec()
		h := a.serveOp(op)
		if sp.Stream {
			sh, ok := streams[sp.Name]
			if !ok {
				panic("api: no handler for the stream " + sp.Name)
			}
			h = a.serveStream(op, sh)
		}
		if sp.Name == ops.GetOutput.Spec().Name {
			h = a.followable(op, h)
		}
		pattern := sp.Method + " " + sp.Path
		a.routes = append(a.routes, Route{Operation: sp.Name, Pattern: pattern, Permission: sp.Permission, Resource: sp.Resource})
		a.mux.Handle(pattern, a.authed(h))
	}
}

// serveOp is the HTTP adapter of a request/response operation: it calls
// the operation (ops.Call) on the path, the query and the JSON body, which
// checks the caller's permission first and then builds and checks the
// input once; it extends the write deadline by how long the call may
// wait, and writes the output with its status.
func (a *API) serveOp(op ops.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			// readBody read the whole body already (at most ops.MaxBody).
			body, _ = io.ReadAll(io.LimitReader(r.Body, ops.MaxBody+1))
		}
		// pretty is the answer's, not the operation's; it says nothing of
		// the operation's input, so it is read before the permission.
		q := r.URL.Query()
		pretty, err := prettyOf(q)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		waited := false
		out, err := ops.Call(r.Context(), a.svc, op, ops.Request{Args: body, PathValue: r.PathValue, Query: q, Header: r.Header.Get,
			Ready: func(in any) {
				if op.Wait(in) > 0 {
					waited = true
					a.holdWrite(w)
				}
			}})
		if waited {
			a.resumeWrite(w)
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		status := op.StatusOf(out)
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeAnswer(w, status, out, pretty)
	})
}

// prettyOf takes the pretty parameter out of q (it is the answer's, not
// the operation's): absent, or 1/true for indented JSON, 0/false for none.
func prettyOf(q url.Values) (bool, error) {
	if !q.Has("pretty") {
		return false, nil
	}
	v := q.Get("pretty")
	q.Del("pretty")
	switch v {
	case "", "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, &cks.FieldError{Field: "pretty", Expected: "1, true, 0 or false"}
}

// serveStream serves a stream of the table behind its permission (a
// stream reads nothing of its path or query).
func (a *API) serveStream(op ops.Operation, h http.Handler) http.Handler {
	sp := op.Spec()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := auth.Require(r.Context(), sp.Permission, sp.Resource); err != nil {
			a.fail(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// holdWrite lifts the write deadline of a request that may wait (a stop or
// update awaiting an abort confirmation, a long-poll claim: each bounded by
// its own wait), so the server's write timeout does not cut the wait
// short; resumeWrite sets it again, a write timeout from the moment the
// answer is ready. (A deadline of the wait plus the write timeout, set
// before the wait, left the answer only the write timeout's slack after a
// timer that fires late on a loaded machine: the answer was cut, EOF.)
func (a *API) holdWrite(w http.ResponseWriter) {
	if a.cfg.WriteTimeout > 0 {
		http.NewResponseController(w).SetWriteDeadline(time.Time{}) //nolint:errcheck // as in clearDeadlines
	}
}

func (a *API) resumeWrite(w http.ResponseWriter) {
	if a.cfg.WriteTimeout > 0 {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(a.cfg.WriteTimeout)) //nolint:errcheck // as in clearDeadlines
	}
}

// ParseTaskFilter reads the query of GET /v1/tasks (list_tasks) into the
// store's filter at time now: state and type (repeatable or
// comma-separated), cursor, limit, and stopped_longer_than (a duration such
// as 24h: STOPPED tasks whose state has not changed for at least that long).
func ParseTaskFilter(q url.Values, now time.Time) (cks.TaskFilter, error) {
	in, err := ops.HTTPInput(ops.ListTasks, func(string) string { return "" }, q, nil)
	if err != nil {
		return cks.TaskFilter{}, err
	}
	return ops.TaskFilterOf(*in.(*cks.ListTasksInput), now)
}

// ParseObjectFilter reads the query of GET /v1/objects (list_objects):
// status and kind (repeatable or comma-separated), cursor and limit.
func ParseObjectFilter(q url.Values) (cks.ObjectFilter, error) {
	in, err := ops.HTTPInput(ops.ListObjects, func(string) string { return "" }, q, nil)
	if err != nil {
		return cks.ObjectFilter{}, err
	}
	return in.(*cks.ListObjectsInput).ObjectFilter()
}

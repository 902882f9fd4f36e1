package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/events"
	"github.com/cks-dev/cks/liveness"
	"github.com/cks-dev/cks/store"
)

// routeProcessStop registers POST /v1/processes/{kind}/stop (ADR-016): ask a
// standalone agent process to finish its current task and exit. {kind} is a
// process kind (its newest instance) or an instance id; either way the caller
// needs control on /processes/KIND of the process it names. There is no start
// (ADR-016 §4).
func (a *API) routeProcessStop() {
	a.addRoute(Route{
		Pattern:    "POST /v1/processes/{kind}/stop",
		Permission: auth.PermControl,
		Resource:   "/processes/{kind}",
		handler:    http.HandlerFunc(a.stopProcess),
		resourceOf: a.processStopResource,
	})
}

// processStopResource is the resource of a stop request: /processes/KIND for
// a kind, and for an instance id /processes/KIND of that instance's kind. A
// target that is neither is checked as /processes/TARGET (so only a caller who
// may control it learns, from the handler's 400, that it names nothing).
func (a *API) processStopResource(r *http.Request) (string, error) {
	target := r.PathValue("kind")
	if target == "" || strings.Contains(target, "/") {
		return "", &store.FieldError{Field: "kind", Expected: fmt.Sprintf("a single path segment, got %q", target)}
	}
	if slices.Contains(liveness.KnownKinds(), target) {
		return auth.ProcessResource(target), nil
	}
	p, err := a.cfg.Liveness.ResolveProcess(r.Context(), target)
	if _, unknown := errors.AsType[*liveness.UnknownKindError](err); unknown {
		return auth.ProcessResource(target), nil
	}
	if err != nil {
		return "", err
	}
	return auth.ProcessResource(p.ProcessKind), nil
}

// stopProcess answers a liveness.StopResult: found false (200, not an error)
// when no alive instance was there to ask.
func (a *API) stopProcess(w http.ResponseWriter, r *http.Request) {
	res, err := a.cfg.Liveness.RequestStop(r.Context(), r.PathValue("kind"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if res.Found {
		// The row's desired_state changed: tell this hub's viewers now rather
		// than at the liveness watch's next read (which notices it too).
		a.cfg.Bus.Publish(events.Event{Type: events.ProcessesChanged, At: a.cfg.Clock.Now()})
	}
	writeJSON(w, http.StatusOK, res)
}

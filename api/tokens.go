package api

import (
	"net/http"
	"strconv"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/store"
)

// routeTokens registers token management: every call needs admin on /.
func (a *API) routeTokens() {
	h := func(pattern string, f http.HandlerFunc) { a.route(pattern, auth.PermAdmin, auth.ResourceRoot, f) }
	h("POST /v1/tokens", a.createToken)
	h("GET /v1/tokens", a.listTokens)
	h("DELETE /v1/tokens/{id}", a.revokeToken)
}

// TokenRequest is the body of POST /v1/tokens.
type TokenRequest struct {
	// Name labels the principal (default "task/ID" with TaskID, else required).
	Name string `json:"name"`
	// Grants are PERMISSION on RESOURCE pairs (auth.ValidGrant).
	Grants []store.Grant `json:"grants"`
	// TaskID, when set, adds the grants of a task-scoped agent credential
	// for that task (read, append, create on /tasks/ID); the task must exist.
	TaskID int64 `json:"task_id,omitempty"`
}

// CreatedToken is the answer of POST /v1/tokens. Token is shown this once:
// only its hash is stored.
type CreatedToken struct {
	store.PrincipalGrants
	Token string `json:"token"`
}

// TokenList is the body of GET /v1/tokens: every principal with its grants
// (never a token or its hash).
type TokenList struct {
	Tokens []store.PrincipalGrants `json:"tokens"`
}

func (a *API) createToken(w http.ResponseWriter, r *http.Request) {
	var req TokenRequest
	if err := decode(r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	grants := req.Grants
	if req.TaskID != 0 {
		if req.TaskID < 0 {
			a.fail(w, r, &store.FieldError{Field: "task_id", Expected: "a positive task id"})
			return
		}
		if a.cfg.Tasks != nil {
			if _, err := a.cfg.Tasks.GetTask(r.Context(), req.TaskID); err != nil {
				a.fail(w, r, err)
				return
			}
		}
		grants = append(auth.TaskTokenGrants(req.TaskID), grants...)
		if req.Name == "" {
			req.Name = "task/" + strconv.FormatInt(req.TaskID, 10)
		}
	}
	if len(grants) == 0 {
		a.fail(w, r, &store.FieldError{Field: "grants", Expected: "at least one grant (or a task_id)"})
		return
	}
	p, tok, err := auth.CreateToken(r.Context(), a.cfg.Auth.Principals(), a.cfg.Clock, req.Name, grants)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	gs, err := a.cfg.Auth.Principals().GrantsOf(r.Context(), p.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, CreatedToken{PrincipalGrants: store.PrincipalGrants{Principal: p, Grants: gs}, Token: tok})
}

func (a *API) listTokens(w http.ResponseWriter, r *http.Request) {
	ps, err := a.cfg.Auth.Principals().ListPrincipals(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if ps == nil {
		ps = []store.PrincipalGrants{}
	}
	writeJSON(w, http.StatusOK, TokenList{Tokens: ps})
}

func (a *API) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Auth.Principals().DeletePrincipal(r.Context(), r.PathValue("id")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

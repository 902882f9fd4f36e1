package ops

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
)

// Token management: bearer tokens of principals and their grants, and the
// studio sessions opened with them. Every call needs admin on /.

// tokenOp declares a token or session call: admin on /.
func tokenOp[In, Out any](e cks.Endpoint[In, Out], o *Op[In, Out]) *Op[In, Out] {
	o.spec.Permission, o.spec.Resource = auth.PermAdmin, auth.ResourceRoot
	o.spec.Surfaces, o.spec.Needs = HTTP|CLI, NeedPrincipals
	return define(e, o)
}

// CreateToken is create_token.
var CreateToken = tokenOp(cks.OpCreateToken, &Op[cks.CreateTokenInput, cks.CreatedToken]{
	spec: Spec{
		Title: "Create token", Status: http.StatusCreated,
		Summary:     "create a bearer token (shown once) with its grants",
		Description: "Create a principal with a new bearer token and its grants; the token is in this answer only (the hub stores its hash).",
		Secret:      true, Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	check: func(in *cks.CreateTokenInput) error {
		for _, g := range in.Grants {
			if err := auth.ValidGrant(g); err != nil {
				return err
			}
		}
		switch {
		case in.TaskID != 0:
		case len(in.Grants) == 0:
			return &cks.FieldError{Field: "grants", Expected: "at least one grant (or a task_id)"}
		case strings.TrimSpace(in.Name) == "":
			return &cks.FieldError{Field: "name", Expected: "a non-empty token name (or a task_id)"}
		}
		return nil
	},
	call: func(ctx context.Context, s *Services, in *cks.CreateTokenInput) (cks.CreatedToken, error) {
		grants, name := in.Grants, in.Name
		if in.TaskID != 0 {
			if s.Tasks != nil {
				if _, err := s.Tasks.GetTask(ctx, in.TaskID); err != nil {
					return cks.CreatedToken{}, err
				}
			}
			grants = append(auth.TaskTokenGrants(in.TaskID), grants...)
			if name == "" {
				name = "task/" + strconv.FormatInt(in.TaskID, 10)
			}
		}
		p, tok, err := auth.CreateToken(ctx, s.Principals, s.clock(), name, grants)
		if err != nil {
			return cks.CreatedToken{}, err
		}
		gs, err := s.Principals.GrantsOf(ctx, p.ID)
		if err != nil {
			return cks.CreatedToken{}, err
		}
		return cks.CreatedToken{PrincipalGrants: cks.PrincipalGrants{Principal: p, Grants: gs}, Token: tok}, nil
	},
})

// ListTokens is list_tokens.
var ListTokens = tokenOp(cks.OpListTokens, &Op[struct{}, cks.TokenList]{
	spec: Spec{
		Title:       "List tokens",
		Summary:     "every principal with its grants (never a token or its hash)",
		Description: "Every principal with its grants, oldest first; never a token or its hash.",
		Hints:       readOnly,
	},
	call: func(ctx context.Context, s *Services, _ *struct{}) (cks.TokenList, error) {
		ps, err := s.Principals.ListPrincipals(ctx)
		if ps == nil {
			ps = []cks.PrincipalGrants{}
		}
		return cks.TokenList{Tokens: ps}, err
	},
})

// RevokeToken is revoke_token.
var RevokeToken = tokenOp(cks.OpRevokeToken, &Op[cks.TokenInput, struct{}]{
	spec: Spec{
		Title: "Revoke token", Status: http.StatusNoContent,
		Summary:     "revoke a principal (204); the last admin cannot be revoked",
		Description: "Delete a principal and its grants: its token stops authenticating at once. The last principal with admin on / is a conflict.",
		Hints:       Hints{Destructive: new(true), OpenWorld: new(false)}, // a second revoke is a 404
	},
	call: func(ctx context.Context, s *Services, in *cks.TokenInput) (struct{}, error) {
		return struct{}{}, s.Principals.DeletePrincipal(ctx, in.ID)
	},
})

// ListSessions is list_sessions.
var ListSessions = tokenOp(cks.OpListSessions, &Op[cks.ListSessionsInput, cks.SessionList]{
	spec: Spec{
		Title:       "List sessions",
		Summary:     "a page of the studio sessions, newest first, with their principals and the total (never a secret or its hash)",
		Description: "A page of the studio sign-ins that have not ended, newest first, with how many there are in all (total) and the cursor of the next page: each one's id, its principal's id and name, when it was opened and when it expires; never its secret or the secret's hash. A principal keeps at most 16 sessions (a sign-in past them signs out its oldest). Expired ones are deleted by the lease reaper and may be listed until then.",
		Hints:       readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.ListSessionsInput) (cks.SessionList, error) {
		return s.Principals.ListSessions(ctx, *in)
	},
})

// RevokeSession is revoke_session.
var RevokeSession = tokenOp(cks.OpRevokeSession, &Op[cks.SessionInput, struct{}]{
	spec: Spec{
		Title: "Revoke session", Status: http.StatusNoContent,
		Summary:     "end a studio session (204); its cookie stops authenticating at once",
		Description: "Delete a studio session: the browser holding its cookie is signed out at its next request. An unknown id is a 404. Revoking the session's principal (revoke_token) ends all its sessions.",
		Hints:       Hints{Destructive: new(true), OpenWorld: new(false)}, // a second revoke is a 404
	},
	call: func(ctx context.Context, s *Services, in *cks.SessionInput) (struct{}, error) {
		return struct{}{}, s.Principals.DeleteSession(ctx, in.ID)
	},
})

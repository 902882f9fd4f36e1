package studio

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// AccessPath is the access page: the principals with their grants (who may
// stop, start, update, … which resource; ADR 0020's ACL permissions), a form
// creating a token with its grants, and the studio sessions. Its reads are
// list_tokens and list_sessions, its actions calls of create_token,
// revoke_token and revoke_session: all need admin on /.
const AccessPath = "/access"

// grantRows is how many grant rows the create form offers.
const grantRows = 4

// accessSessions is how many sessions, the newest, the access page shows;
// it says how many there are in all (cks session list pages them).
const accessSessions = 100

// accessView is the data of the access page.
type accessView struct {
	Principals []principalView
	Sessions   []sessionView
	// SessionTotal is how many sessions there are; Sessions are the
	// newest accessSessions of them.
	SessionTotal int
	// Permissions are the permissions a grant may give, for the form.
	Permissions []string
	// Rows numbers the create form's grant rows.
	Rows []int
	// Refused names, per action ("create", "revoke_token",
	// "revoke_session") the viewer may not use, why.
	Refused map[string]string
}

// principalView is one principal, formatted for display.
type principalView struct {
	ID, Name  string
	Created   timeField
	Grants    []cks.Grant
	LeaseTask int64 // a claim's task credential: bound to that task's lease
	Admin     bool  // holds admin on /
}

// sessionView is one studio session, formatted for display.
type sessionView struct {
	ID, Principal, PrincipalID string
	Created, Expires           timeField
	// Current: the session this page was asked for with (the viewer's).
	Current bool
}

// access renders the access page. Who may not list the principals gets
// the 403 page naming the permission (admin on /).
func (s *server) access(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	toks, err := ops.ListTokens.Do(ctx, s.ops, &struct{}{})
	if s.forbidden(w, r, err) {
		return
	}
	var sess cks.SessionList
	if err == nil {
		sess, err = ops.ListSessions.Do(ctx, s.ops, &cks.ListSessionsInput{Limit: accessSessions})
		if s.forbidden(w, r, err) {
			return
		}
	}
	if err != nil {
		s.logErr(r, "studio: list principals", err)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not list principals",
			"The principals and sessions could not be read from the store. The error was logged on the hub; reload this page to try again.")
		return
	}
	now := s.clock.Now()
	v := accessView{Permissions: auth.Permissions, Refused: map[string]string{}}
	for i := range grantRows {
		v.Rows = append(v.Rows, i)
	}
	for _, p := range toks.Tokens {
		pv := principalView{ID: p.ID, Name: p.Name, Created: at(now, p.CreatedAt), Grants: p.Grants}
		if p.Lease != nil {
			pv.LeaseTask = p.Lease.TaskID
		}
		pv.Admin = slices.ContainsFunc(p.Grants, func(g cks.Grant) bool {
			return g.Permission == auth.PermAdmin && g.Resource == auth.ResourceRoot
		})
		v.Principals = append(v.Principals, pv)
	}
	mine := auth.SessionFrom(ctx)
	v.SessionTotal = sess.Total
	for _, x := range sess.Sessions {
		v.Sessions = append(v.Sessions, sessionView{ID: x.ID, Principal: x.PrincipalName, PrincipalID: x.PrincipalID,
			Created: at(now, x.CreatedAt), Expires: at(now, x.ExpiresAt), Current: mine != "" && x.ID == mine})
	}
	// The viewer's own session first, the others in the listing's order.
	slices.SortStableFunc(v.Sessions, func(a, b sessionView) int { return cmp.Compare(btoi(b.Current), btoi(a.Current)) })
	for verb, op := range map[string]struct {
		op ops.Operation
		in any
	}{
		"create":         {ops.CreateToken, &cks.CreateTokenInput{}},
		"revoke_token":   {ops.RevokeToken, &cks.TokenInput{}},
		"revoke_session": {ops.RevokeSession, &cks.SessionInput{}},
	} {
		if err := ops.Authorize(ctx, s.ops, op.op, op.in); err != nil {
			v.Refused[verb] = err.Error()
		}
	}
	s.render(w, r, http.StatusOK, pages["access"], "layout", s.page("Access", "access", false, v))
}

// mayAdminister reports whether the request's principal may read the
// access page (list_tokens' permission): the header links it only then.
func (s *server) mayAdminister(r *http.Request) bool {
	if s.ops.Principals == nil {
		return false
	}
	return ops.Authorize(r.Context(), s.ops, ops.ListTokens, &struct{}{}) == nil
}

// btoi is 1 for true, 0 for false (a sort key).
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

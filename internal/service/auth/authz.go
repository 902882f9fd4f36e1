package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// ErrForbidden means an authenticated principal lacks the permission an
// operation needs. Errors matching it are *ForbiddenError values naming the
// permission and the resource.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError is the error Check returns: Principal does not hold
// Permission (nor admin) on Resource or any prefix of it.
type ForbiddenError struct {
	// Principal names the caller (its name, or "" when there was none).
	Principal  string
	Permission string
	Resource   string
}

func (e *ForbiddenError) Error() string {
	who := "the caller"
	if e.Principal != "" {
		who = fmt.Sprintf("principal %q", e.Principal)
	}
	return fmt.Sprintf("forbidden: %s needs %s on %s", who, e.Permission, e.Resource)
}

// Unwrap makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// Permissions lists every permission, in the order of DESIGN.md §10 (retry,
// of issue 24, beside cancel). Admin implies every other; no other
// permission implies anything (stop does not grant start, update does not
// grant stop, start does not grant retry).
var Permissions = []string{PermRead, PermAppend, PermCreate, PermUpdate, PermStop, PermStart, PermCancel, PermRetry, PermControl, PermAdmin}

// Roots of the resource tree. A resource is "/", a root, or a root followed by
// one id segment: /tasks/ID, /sweepers/ID, /processes/KIND, /objects/ID,
// /schedules/NAME, /types/TYPE (TypeResource), /limits/NAME.
const (
	ResourceRoot      = "/"
	ResourceTasks     = "/tasks"
	ResourceSweepers  = "/sweepers"
	ResourceProcesses = "/processes"
	ResourceObjects   = "/objects"
	ResourceSchedules = "/schedules"
	ResourceTypes     = "/types"
	ResourceLimits    = "/limits"
)

var roots = []string{ResourceTasks, ResourceSweepers, ResourceProcesses, ResourceObjects, ResourceSchedules, ResourceTypes, ResourceLimits}

// TypeResource returns /types/TYPE, the resource of a task type's flow
// control (pause_type). A type may hold "/" (repo/build), so the segment is
// the type path-escaped (/types/repo%2Fbuild): one segment, as every id.
func TypeResource(typ string) string { return ResourceTypes + "/" + url.PathEscape(typ) }

// TaskResource returns /tasks/ID.
func TaskResource(id int64) string { return ResourceTasks + "/" + strconv.FormatInt(id, 10) }

// sweeperResource returns /sweepers/ID.
func sweeperResource(id string) string { return ResourceSweepers + "/" + id }

// ProcessResource returns /processes/KIND.
func ProcessResource(kind string) string { return ResourceProcesses + "/" + kind }

// validPermission reports whether perm is one of Permissions.
func validPermission(perm string) error {
	if !slices.Contains(Permissions, perm) {
		return &cks.FieldError{Field: "permission", Expected: fmt.Sprintf("one of %s, got %q", strings.Join(Permissions, ", "), perm)}
	}
	return nil
}

// ValidResource reports whether res is a node of the resource tree: "/",
// /tasks, /tasks/ID (a positive integer), /sweepers, /sweepers/ID, /processes,
// /processes/KIND, /objects, /objects/ID, /schedules, /schedules/NAME, /types or /types/TYPE.
func ValidResource(res string) error {
	if res == ResourceRoot {
		return nil
	}
	bad := &cks.FieldError{Field: "resource", Expected: fmt.Sprintf(
		"/, or one of %s optionally followed by /ID (a positive integer under /tasks), got %q", strings.Join(roots, ", "), res)}
	for _, root := range roots {
		if res == root {
			return nil
		}
		id, ok := strings.CutPrefix(res, root+"/")
		if !ok {
			continue
		}
		if id == "" || strings.ContainsAny(id, "/ \t\n") {
			return bad
		}
		if root == ResourceTasks {
			if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
				return bad
			}
		}
		return nil
	}
	return bad
}

// ParseGrant reads PERM:RESOURCE (e.g. "read:/tasks" or "append:/tasks/42")
// and validates both halves.
func ParseGrant(s string) (cks.Grant, error) {
	perm, res, ok := strings.Cut(s, ":")
	if !ok {
		return cks.Grant{}, &cks.FieldError{Field: "grant", Expected: fmt.Sprintf("PERMISSION:RESOURCE such as read:/tasks, got %q", s)}
	}
	g := cks.Grant{Permission: perm, Resource: res}
	return g, ValidGrant(g)
}

// ValidGrant reports whether g names a known permission on a valid resource.
func ValidGrant(g cks.Grant) error {
	if err := validPermission(g.Permission); err != nil {
		return err
	}
	return ValidResource(g.Resource)
}

// Covers reports whether a grant on prefix applies to resource: prefix is "/",
// resource itself, or an ancestor by whole path segments ("/tasks/1" covers
// neither "/tasks/12" nor "/tasks").
func Covers(prefix, resource string) bool {
	return prefix == ResourceRoot || resource == prefix || strings.HasPrefix(resource, prefix+"/")
}

// Allows reports whether grants give perm on resource: a grant of perm or of
// admin on resource or on an ancestor of it.
func Allows(grants []cks.Grant, perm, resource string) bool {
	for _, g := range grants {
		if (g.Permission == perm || g.Permission == PermAdmin) && Covers(g.Resource, resource) {
			return true
		}
	}
	return false
}

// AllowsWithin reports whether grants give perm on resource, on an
// ancestor of it or on a node below it: whether the caller holds perm on
// some resource an operation whose resource lies under resource (its id
// not yet known) could be checked on.
func AllowsWithin(grants []cks.Grant, perm, resource string) bool {
	for _, g := range grants {
		if (g.Permission == perm || g.Permission == PermAdmin) && (Covers(g.Resource, resource) || Covers(resource, g.Resource)) {
			return true
		}
	}
	return false
}

// Check, checkWithin and the Require functions are the one place
// permissions are checked, for the HTTP API, the MCP tools and the studio
// alike. Nothing is cached across requests: a check reads the principal's
// grants, or uses those its request read with the principal
// (WithPrincipalGrants), so a revoked or changed grant applies to the
// next request.

// Check returns nil when p holds perm (or admin) on resource or an ancestor
// of it, and otherwise a *ForbiddenError (matching ErrForbidden) naming the
// missing permission and the resource.
func (s *Service) Check(ctx context.Context, p cks.Principal, perm, resource string) error {
	return s.check(ctx, p, perm, []string{resource}, Allows)
}

// checkWithin is Check by AllowsWithin: nil when p holds perm on resource,
// an ancestor or a node below it, else a *ForbiddenError naming resource.
func (s *Service) checkWithin(ctx context.Context, p cks.Principal, perm, resource string) error {
	return s.check(ctx, p, perm, []string{resource}, AllowsWithin)
}

// check is Check by allows of every one of resources, p's grants read
// once, now; a refusal names the first resource refused.
func (s *Service) check(ctx context.Context, p cks.Principal, perm string, resources []string,
	allows func([]cks.Grant, string, string) bool) error {
	grants, err := s.GrantsOf(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("auth: grants of %q: %w", p.Name, err)
	}
	return checkGrants(p, grants, perm, resources, allows)
}

// checkGrants is check of grants, p's.
func checkGrants(p cks.Principal, grants []cks.Grant, perm string, resources []string,
	allows func([]cks.Grant, string, string) bool) error {
	for _, r := range resources {
		if !allows(grants, perm, r) {
			return &ForbiddenError{Principal: p.Name, Permission: perm, Resource: r}
		}
	}
	return nil
}

type callerKey struct{}

type caller struct {
	authz     *Service
	principal cks.Principal
	local     bool
	// grants were read with the principal (granted: WithPrincipalGrants).
	grants  []cks.Grant
	granted bool
}

// WithPrincipal returns ctx carrying an authenticated principal and the
// service that checks it, for Require further down the call.
func WithPrincipal(ctx context.Context, authz *Service, p cks.Principal) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{authz: authz, principal: p})
}

// WithPrincipalGrants is WithPrincipal with p's grants as the request
// read them (AuthenticateWithGrants): the checks of the request use them
// instead of reading them again. Only for a context that ends with its
// request (see ForgetGrants).
func WithPrincipalGrants(ctx context.Context, authz *Service, p cks.Principal, grants []cks.Grant) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{authz: authz, principal: p, grants: grants, granted: true})
}

// ForgetGrants returns ctx without the grants its request read
// (WithPrincipalGrants), the principal kept: for a context that outlives
// its request (an MCP session's), whose later checks must each read the
// grants as they are then.
func ForgetGrants(ctx context.Context) context.Context {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok || !c.granted {
		return ctx
	}
	c.grants, c.granted = nil, false
	return context.WithValue(ctx, callerKey{}, c)
}

// PinGrants returns ctx whose checks use its caller's grants as read
// now, once, for a batch of checks made at one moment (a tools/list
// weighing every tool): the grants its request read, if any, else those
// read here. A ctx of the local operator or of no caller is returned as
// it is.
func PinGrants(ctx context.Context) (context.Context, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok || c.local || c.granted {
		return ctx, nil
	}
	grants, err := c.authz.GrantsOf(ctx, c.principal.ID)
	if err != nil {
		return ctx, fmt.Errorf("auth: grants of %q: %w", c.principal.Name, err)
	}
	c.grants, c.granted = grants, true
	return context.WithValue(ctx, callerKey{}, c), nil
}

// WithLocalOperator returns ctx marking the caller as the local operator (the
// person at the terminal of `cks mcp --embedded` over stdio), who holds admin.
func WithLocalOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{local: true})
}

// PrincipalFrom returns the principal WithPrincipal put in ctx.
func PrincipalFrom(ctx context.Context) (cks.Principal, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c.principal, ok && !c.local
}

// Require checks that the caller recorded in ctx holds perm on resource. The
// local operator holds everything. A ctx with no caller is refused: callers
// that forgot to authenticate fail closed.
func Require(ctx context.Context, perm, resource string) error {
	return requireBy(ctx, perm, []string{resource}, Allows)
}

// RequireWithin is Require by checkWithin: that the caller in ctx holds
// perm on resource, an ancestor or a node below it (the check a surface
// makes before it knows which node a call names).
func RequireWithin(ctx context.Context, perm, resource string) error {
	return requireBy(ctx, perm, []string{resource}, AllowsWithin)
}

// RequireEach is Require of perm on every one of resources, the caller's
// grants read once (not once per resource); a refusal is a
// *ForbiddenError naming the first resource refused. No resources is nil.
func RequireEach(ctx context.Context, perm string, resources []string) error {
	if len(resources) == 0 {
		return nil
	}
	return requireBy(ctx, perm, resources, Allows)
}

// requireBy is Require of perm on every one of resources (at least one)
// by allows: against the grants the request read with its principal, or
// those read now.
func requireBy(ctx context.Context, perm string, resources []string, allows func([]cks.Grant, string, string) bool) error {
	c, ok := ctx.Value(callerKey{}).(caller)
	switch {
	case !ok:
		return &ForbiddenError{Permission: perm, Resource: resources[0]}
	case c.local:
		return nil
	case c.granted:
		return checkGrants(c.principal, c.grants, perm, resources, allows)
	}
	return c.authz.check(ctx, c.principal, perm, resources, allows)
}

// TaskTokenGrants are the grants of a task-scoped agent credential for task
// id: read, append and create on /tasks/ID only. Create there lets the agent
// enqueue children of its task (parent_id = ID); it cannot stop, start,
// update, cancel or review its task, nor touch any other.
func TaskTokenGrants(id int64) []cks.Grant {
	res := TaskResource(id)
	return []cks.Grant{{Resource: res, Permission: PermRead}, {Resource: res, Permission: PermAppend}, {Resource: res, Permission: PermCreate}}
}

// CreateToken creates a principal named name with grants and returns it with
// its bearer token, which is not stored (only its hash is) and cannot be
// shown again. Every grant must be valid (ValidGrant).
func CreateToken(ctx context.Context, s *Service, c clock.Clock, name string, grants []cks.Grant) (cks.Principal, string, error) {
	if strings.TrimSpace(name) == "" {
		return cks.Principal{}, "", &cks.FieldError{Field: "name", Expected: "a non-empty token name"}
	}
	for _, g := range grants {
		if err := ValidGrant(g); err != nil {
			return cks.Principal{}, "", err
		}
	}
	if c == nil {
		c = clock.System{}
	}
	tok, err := NewToken()
	if err != nil {
		return cks.Principal{}, "", err
	}
	p := cks.Principal{ID: uuid.NewString(), Name: name, CreatedAt: driver.Time(c.Now())}
	if err := s.CreatePrincipal(ctx, p, HashToken(tok), grants); err != nil {
		return cks.Principal{}, "", fmt.Errorf("auth: create token %q: %w", p.Name, err)
	}
	return p, tok, nil
}

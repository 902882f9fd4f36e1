package auth_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
)

// segments splits a resource into its path segments ("/" has none).
func segments(res string) []string {
	if res == auth.ResourceRoot {
		return nil
	}
	return strings.Split(strings.TrimPrefix(res, "/"), "/")
}

// coversBySegments is the specification of Covers for valid resources: the
// grant's segments are a prefix of the resource's.
func coversBySegments(prefix, res string) bool {
	p, r := segments(prefix), segments(res)
	return len(p) <= len(r) && slices.Equal(p, r[:len(p)])
}

// checkResource asserts that a resource ValidResource accepts has the shape
// it documents, and rebuilds from its parts.
func checkResource(t *testing.T, res string) {
	t.Helper()
	if res == auth.ResourceRoot {
		return
	}
	segs := segments(res)
	roots := []string{auth.ResourceTasks, auth.ResourceSweepers, auth.ResourceProcesses, auth.ResourceObjects, auth.ResourceSchedules, auth.ResourceTypes}
	if !strings.HasPrefix(res, "/") || len(segs) < 1 || len(segs) > 2 || !slices.Contains(roots, "/"+segs[0]) {
		t.Fatalf("ValidResource accepted %q: not /, a root, or a root and one id", res)
	}
	if len(segs) == 1 {
		return
	}
	id := segs[1]
	if id == "" || strings.ContainsAny(id, " \t\n") {
		t.Fatalf("ValidResource accepted %q: empty or blank-holding id", res)
	}
	if "/"+segs[0] == auth.ResourceTasks {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 || auth.TaskResource(n) != res {
			t.Fatalf("ValidResource accepted %q: a task id must be a positive integer written canonically", res)
		}
	}
	if "/"+segs[0]+"/"+id != res {
		t.Fatalf("ValidResource accepted %q, which does not rebuild from its parts", res)
	}
}

// FuzzValidResource: an accepted resource has the documented shape; a
// refused one is a FieldError naming resource.
func FuzzValidResource(f *testing.F) {
	for _, s := range []string{"/", "/tasks", "/tasks/1", "/tasks/01", "/tasks/0", "/tasks/-1", "/tasks/+1", "/tasks/1/x",
		"/tasks/9223372036854775808", "/sweepers/lease_reaper", "/sweepers/", "/processes/exec", "/objects/a b", "/objects/x\x00",
		"/objects/\xff", "//", "tasks", "/tasks/", "/Tasks", "/tasks//1", "/tasks/1 ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, res string) {
		err := auth.ValidResource(res)
		if err != nil {
			var fe *cks.FieldError
			if !errors.As(err, &fe) || fe.Field != "resource" {
				t.Fatalf("ValidResource(%q) = %v, want a FieldError naming resource", res, err)
			}
			return
		}
		checkResource(t, res)
	})
}

// FuzzParseGrant: an accepted PERM:RESOURCE names a known permission on a
// valid resource and round-trips; a refused one is a FieldError.
func FuzzParseGrant(f *testing.F) {
	for _, s := range []string{"read:/tasks", "append:/tasks/42", "admin:/", "read", "read:", ":/", "read:/tasks:x",
		"READ:/tasks", " read:/tasks", "read:/sweepers/a:b", "stop:/tasks/1\x00", "control:/processes/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := auth.ParseGrant(s)
		if err != nil {
			var fe *cks.FieldError
			if !errors.As(err, &fe) || !slices.Contains([]string{"grant", "permission", "resource"}, fe.Field) {
				t.Fatalf("ParseGrant(%q) = %v, want a FieldError naming grant, permission or resource", s, err)
			}
			return
		}
		if !slices.Contains(auth.Permissions, g.Permission) || auth.ValidGrant(g) != nil {
			t.Fatalf("ParseGrant(%q) accepted %+v", s, g)
		}
		checkResource(t, g.Resource)
		if back := g.Permission + ":" + g.Resource; back != s {
			t.Fatalf("ParseGrant(%q) = %+v, which writes back as %q", s, g, back)
		}
	})
}

// FuzzCovers: Covers is by whole path segments (a grant on /tasks/1 never
// covers /tasks/12), for valid resources exactly the segment-prefix
// relation, reflexive for any string, and Allows agrees with it: a grant of
// the permission or of admin on a covering resource, nothing else.
func FuzzCovers(f *testing.F) {
	for _, p := range [][3]string{{"/tasks/1", "/tasks/12", "read"}, {"/tasks", "/tasks/12", "append"}, {"/", "/objects/3", "stop"},
		{"/tasks/12", "/tasks/1", "admin"}, {"/task", "/tasks", "read"}, {"/sweepers/a", "/sweepers/a", "control"},
		{"/processes/exec", "/processes/exec2", "control"}, {"/tasks/", "/tasks//1", "read"}} {
		f.Add(p[0], p[1], p[2], byte(0))
	}
	f.Fuzz(func(t *testing.T, prefix, res, perm string, held byte) {
		got := auth.Covers(prefix, res)
		if !auth.Covers(prefix, prefix) || !auth.Covers(res, res) {
			t.Fatalf("Covers is not reflexive on %q / %q", prefix, res)
		}
		if auth.ValidResource(prefix) == nil && auth.ValidResource(res) == nil {
			if want := coversBySegments(prefix, res); got != want {
				t.Fatalf("Covers(%q, %q) = %t, want %t (by whole segments)", prefix, res, got, want)
			}
		}
		// A strict prefix of a segment never covers: /tasks/1 vs /tasks/12.
		if got && prefix != auth.ResourceRoot && res != prefix && !strings.HasPrefix(res, prefix+"/") {
			t.Fatalf("Covers(%q, %q) without a whole-segment prefix", prefix, res)
		}
		// Allows with one grant of the permission held%len picks.
		g := cks.Grant{Permission: auth.Permissions[int(held)%len(auth.Permissions)], Resource: prefix}
		allowed := auth.Allows([]cks.Grant{g}, perm, res)
		if want := got && (g.Permission == perm || g.Permission == auth.PermAdmin); allowed != want {
			t.Fatalf("Allows(%+v, %q, %q) = %t, want %t", g, perm, res, allowed, want)
		}
		// More grants never take a permission away; none gives nothing.
		other := cks.Grant{Permission: auth.PermRead, Resource: res}
		if allowed && !auth.Allows([]cks.Grant{other, g}, perm, res) {
			t.Fatalf("adding %+v took %s on %q away", other, perm, res)
		}
		if auth.Allows(nil, perm, res) {
			t.Fatalf("no grants allowed %s on %q", perm, res)
		}
	})
}

package auth

import (
	"fmt"

	"github.com/cks-dev/cks"
)

// validatePrincipal reports the first argument of CreatePrincipal that a
// backend must not store: text that is not ValidateText's (id, name,
// token_hash, grants[i].resource and .permission), then an empty id, name or
// token hash (FieldError principal), or a lease binding that names no task
// or no lease token hash (FieldError lease). Whether a grant names a known
// permission on a node of the resource tree is package auth's rule.
func validatePrincipal(p cks.Principal, tokenHash string, grants []cks.Grant) error {
	for _, f := range []struct{ name, v string }{{"id", p.ID}, {"name", p.Name}, {"token_hash", tokenHash}} {
		if err := cks.ValidateText(f.name, f.v); err != nil {
			return err
		}
	}
	for i, g := range grants {
		if err := cks.ValidateText(fmt.Sprintf("grants[%d].resource", i), g.Resource); err != nil {
			return err
		}
		if err := cks.ValidateText(fmt.Sprintf("grants[%d].permission", i), g.Permission); err != nil {
			return err
		}
	}
	switch {
	case p.ID == "" || p.Name == "" || tokenHash == "":
		return &cks.FieldError{Field: "principal", Expected: "an id, a name and a token hash"}
	case p.Lease != nil && (p.Lease.TaskID <= 0 || p.Lease.LeaseTokenHash == ""):
		return &cks.FieldError{Field: "lease", Expected: "a task id and the hash of its lease token"}
	}
	return nil
}

// AdminResource and AdminPermission name the grant that DeletePrincipal keeps
// at least one principal holding: admin on the root of the resource tree.
const (
	AdminResource   = "/"
	AdminPermission = "admin"
)

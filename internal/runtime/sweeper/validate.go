package sweeper

import (
	"strings"

	"github.com/cks-dev/cks"
)

// validateSweeperID reports a FieldError naming agent_id when id is empty or
// blank; backends call it before touching cks_sweeper_control.
func validateSweeperID(id string) error {
	if err := cks.ValidateText("agent_id", id); err != nil {
		return err
	}
	if strings.TrimSpace(id) == "" {
		return &cks.FieldError{Field: "agent_id", Expected: "a non-empty sweeper id such as \"dependency_release\""}
	}
	return nil
}

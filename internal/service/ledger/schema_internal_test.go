package ledger

import (
	"slices"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver/schema"
)

// TestSchemaStatesAreTheLedgers: the sets of states the schema's partial
// indexes name, declared from the leaf below the services, are the
// ledger's own — the dedupe index's live tasks and the reaper's index of
// leases would otherwise hold other rows than the queries look for.
func TestSchemaStatesAreTheLedgers(t *testing.T) {
	for _, c := range []struct {
		name         string
		schema, ours []cks.TaskState
	}{
		{"terminal", schema.TerminalStates[:], Terminal[:]},
		{"leased", schema.LeasedStates[:], leasedStates[:]},
	} {
		if !slices.Equal(c.schema, c.ours) {
			t.Errorf("the schema's %s states are %v, the ledger's %v", c.name, c.schema, c.ours)
		}
	}
}

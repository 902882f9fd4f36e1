package postgres

import (
	"errors"
	"fmt"
)

// notYet is the error of a stub primitive (knowledge_stub.go); delete this
// file with the last stub.
func notYet(name string) error {
	return fmt.Errorf("postgres: %s: not implemented yet: %w", name, errors.ErrUnsupported)
}

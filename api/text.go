package api

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/ops"
)

// checkRequestText refuses a request whose path values (the wildcards of
// pattern) or query parameters hold text no store backend stores (a NUL
// byte, invalid UTF-8: cks.ValidateText), with a FieldError naming the
// wildcard or parameter, before anything reads the store: such a value
// could never name anything, and Postgres fails on it where SQLite does
// not. A parameter whose name is bad text is refused naming "query".
func checkRequestText(pattern string, r *http.Request) error {
	for _, name := range ops.Wildcards(pattern) {
		if err := cks.ValidateText(name, r.PathValue(name)); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	for _, key := range slices.Sorted(maps.Keys(q)) {
		if err := cks.ValidateText("query", key); err != nil {
			return &cks.FieldError{Field: "query", Expected: fmt.Sprintf("parameter names that are %s, got %q", cks.ExpectedText, key)}
		}
		if err := cks.ValidateTexts(key, q[key]); err != nil {
			return err
		}
	}
	return nil
}

package api

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/cks-dev/cks/store"
)

// checkRequestText refuses a request whose path values (the wildcards of
// pattern) or query parameters hold text no store backend stores (a NUL
// byte, invalid UTF-8: store.ValidateText), with a FieldError naming the
// wildcard or parameter, before anything reads the store: such a value
// could never name anything, and Postgres fails on it where SQLite does
// not. A parameter whose name is bad text is refused naming "query".
func checkRequestText(pattern string, r *http.Request) error {
	for _, name := range wildcards(pattern) {
		if err := store.ValidateText(name, r.PathValue(name)); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	for _, key := range slices.Sorted(maps.Keys(q)) {
		if err := store.ValidateText("query", key); err != nil {
			return &store.FieldError{Field: "query", Expected: fmt.Sprintf("parameter names that are %s, got %q", store.ExpectedText, key)}
		}
		if err := store.ValidateTexts(key, q[key]); err != nil {
			return err
		}
	}
	return nil
}

// wildcards returns the names of the {wildcards} of a ServeMux pattern
// ("{path...}" names path).
func wildcards(pattern string) []string {
	var out []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j+1:]
	}
}

package cks_test

import (
	"testing"

	"github.com/cks-dev/cks"
)

// TestErrorSaysItsCodeOnce: an error answer reads as its message, its code
// and its status, the code left out where the message already says it in
// whole words (as the sentinel a service wrapped does: `: conflict`,
// `: not found`), so the CLI never prints `conflict (conflict, HTTP 409)`.
func TestErrorSaysItsCodeOnce(t *testing.T) {
	cases := []struct {
		err  cks.Error
		want string
	}{
		{cks.Error{Status: 409, Code: cks.CodeConflict, Message: "task 1 is already STOPPED: conflict"},
			"task 1 is already STOPPED: conflict (HTTP 409)"},
		{cks.Error{Status: 404, Code: cks.CodeNotFound, Message: `principal "nope": not found`},
			`principal "nope": not found (HTTP 404)`},
		{cks.Error{Status: 409, Code: cks.CodeLeaseLost, Message: "task 3: lease lost: conflict"},
			"task 3: lease lost: conflict (HTTP 409)"},
		{cks.Error{Status: 503, Code: cks.CodeStorageFull, Message: "storage_full: no space left for the write"},
			"storage_full: no space left for the write (HTTP 503)"},
		{cks.Error{Status: 400, Code: cks.CodeInvalidArgument, Message: "invalid reason: expected a non-empty reason"},
			"invalid reason: expected a non-empty reason (invalid_argument, HTTP 400)"},
		// Inside a longer word the code is not said.
		{cks.Error{Status: 409, Code: cks.CodeConflict, Message: "conflicting edits"},
			"conflicting edits (conflict, HTTP 409)"},
		{cks.Error{Status: 409, Code: cks.CodeConflict, Message: "deconflict later"},
			"deconflict later (conflict, HTTP 409)"},
		{cks.Error{Status: 502, Code: cks.CodeHTTP, Message: "502 Bad Gateway"}, "502 Bad Gateway (http, HTTP 502)"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.err, got, c.want)
		}
	}
}

package ops_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// TestErrorAnswersMatchTheirSentinels: an error the hub answers with
// (FailureOf: sentinel → code) matches, as the *cks.Error a client returns,
// the sentinel it was made of (cks.Error.Is: code → sentinel) — so an
// executor over HTTP tells a lost lease from a failure to reach the hub
// as one on the database does — and no other.
func TestErrorAnswersMatchTheirSentinels(t *testing.T) {
	sentinels := []error{cks.ErrLeaseLost, cks.ErrConflict, cks.ErrNotFound, cks.ErrInvalid}
	for _, sent := range sentinels {
		answer := ops.FailureOf(context.Background(), nil, "test", fmt.Errorf("task 1: %w", sent))
		var err error = &answer
		for _, other := range sentinels {
			want := errors.Is(sent, other) // ErrLeaseLost is an ErrConflict too
			if got := errors.Is(err, other); got != want {
				t.Errorf("answer %s (of %v): errors.Is %v = %v, want %v", answer.Code, sent, other, got, want)
			}
		}
	}
	field := ops.FailureOf(context.Background(), nil, "test", &cks.FieldError{Field: "type", Expected: "a type"})
	if err := error(&field); !errors.Is(err, cks.ErrInvalid) {
		t.Errorf("answer %s of a FieldError: not ErrInvalid", field.Code)
	}
	for _, code := range []string{cks.CodeForbidden, cks.CodeStorageUnavailable, cks.CodeInternal, cks.CodeHTTP} {
		err := error(&cks.Error{Code: code})
		if errors.Is(err, cks.ErrConflict) || errors.Is(err, cks.ErrNotFound) || errors.Is(err, cks.ErrInvalid) || errors.Is(err, cks.ErrUnavailable) {
			t.Errorf("answer %s matches a sentinel of another code", code)
		}
	}
}

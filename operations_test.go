package cks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
)

// TestAbortWaitDeadline: a deadline is a Go duration as written — " 30s"
// was accepted once, though neither Go nor the command line takes it.
func TestAbortWaitDeadline(t *testing.T) {
	for _, c := range []struct {
		in   cks.Duration
		want time.Duration
		bad  bool
	}{
		{"", 0, false}, {"30s", 30 * time.Second, false}, {"2m", 2 * time.Minute, false},
		{"  30s", 0, true}, {"30s ", 0, true}, {"30", 0, true}, {"soon", 0, true},
	} {
		d, _, err := cks.AbortWait{Deadline: c.in}.Parse()
		switch {
		case c.bad && !cks.IsFieldError(err, "deadline"):
			t.Errorf("Parse(%q) = %v, %v; want a FieldError naming deadline", c.in, d, err)
		case !c.bad && (err != nil || d != c.want):
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, d, err, c.want)
		}
	}
}

// TestListLimitMessage: a listing's limit is 1 to MaxListLimit, and 0 (or
// none) for the default — what the refusal says, as limit=0 is accepted.
func TestListLimitMessage(t *testing.T) {
	if f, err := (cks.TaskFilter{Limit: 0}).Validate(); err != nil || f.Limit != cks.DefaultListLimit {
		t.Errorf("limit 0: %+v, %v; want the default %d", f, err, cks.DefaultListLimit)
	}
	_, err := cks.TaskFilter{Limit: cks.MaxListLimit + 1}.Validate()
	if !cks.IsFieldError(err, "limit") || !strings.Contains(err.Error(), "0 for the default") {
		t.Errorf("limit past the bound: %v; want a FieldError saying 0 is the default", err)
	}
}

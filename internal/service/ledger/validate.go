package ledger

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/config"
)

// The bound of a lease, the one every claim and review claim meets on every
// surface, and the default of the lease of a claim that names none
// (Settings.DefaultLease, CKS_STALE_WINDOW): the configuration's, which
// bounds the setting by them.
const (
	MinLease     = config.MinLease
	MaxLease     = config.MaxLease
	DefaultLease = config.DefaultLease
)

// validateClaim reports the first bad argument of a claim: an empty worker, a
// batch size outside 1..MaxListLimit, or a lease outside MinLease..MaxLease
// (the service has put its default lease in for none before).
func validateClaim(worker string, n int, lease time.Duration) error {
	if err := cks.ValidateText("worker", worker); err != nil {
		return err
	}
	switch {
	case worker == "":
		return &cks.FieldError{Field: "worker", Expected: "a non-empty worker name"}
	case n < 1 || n > cks.MaxListLimit:
		return &cks.FieldError{Field: "n", Expected: fmt.Sprintf("an integer from 1 to %d", cks.MaxListLimit)}
	case lease < MinLease || lease > MaxLease:
		return &cks.FieldError{Field: "lease_s", Expected: fmt.Sprintf("a lease of %.0f to %.0f seconds", MinLease.Seconds(), MaxLease.Seconds())}
	}
	return nil
}

// sortClaimed orders claimed tasks as a claim picks them: highest priority,
// then oldest, then lowest id (RETURNING gives no order).
func sortClaimed(ts []cks.ClaimedTask) {
	slices.SortFunc(ts, func(x, y cks.ClaimedTask) int {
		if x.Priority != y.Priority {
			return y.Priority - x.Priority
		}
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
}

// ActorDependencyRelease is the event actor of ReleaseDependencies.
const ActorDependencyRelease = "dependency_release"

// groupAttempts fills t.Current and t.History from every evidence and
// decision record of t (oldest first) and its aborts: Current is the attempt
// identified by the task's counters (the attempt in progress, or the last
// one; for a NEEDS_INPUT task the paused one), History every other attempt,
// oldest first. Nothing from an aborted attempt is ever Current: an abort
// gives the attempt back and the restart that follows moves Current on.
// Backends call it from GetTask.
func groupAttempts(t *cks.Task, evidence []cks.Evidence, decisions []cks.Decision, aborts []cks.Abort) {
	type key struct{ restart, attempt int }
	cur := key{t.Restarts, t.Attempts}
	if t.State == "NEEDS_INPUT" {
		cur.attempt++ // RequestInput gave the attempt back; it resumes after Answer
	}
	views := map[key]*cks.AttemptView{}
	view := func(k key) *cks.AttemptView {
		if v := views[k]; v != nil {
			return v
		}
		v := &cks.AttemptView{Restart: k.restart, Attempt: k.attempt}
		views[k] = v
		return v
	}
	view(cur)
	for _, e := range evidence {
		v := view(key{e.Restart, e.Attempt})
		v.Evidence = append(v.Evidence, e)
		if e.Kind == cks.EvidenceWorkspace {
			v.Workspace = e.Body
		}
	}
	for _, d := range decisions {
		v := view(key{d.Restart, d.Attempt})
		v.Decisions = append(v.Decisions, d)
	}
	for _, a := range aborts {
		view(key{a.Restart, a.Attempt}).Aborted = true
	}
	t.Current = views[cur]
	t.History = nil
	for k, v := range views {
		if k != cur {
			t.History = append(t.History, *v)
		}
	}
	slices.SortFunc(t.History, func(a, b cks.AttemptView) int {
		return cmp.Or(cmp.Compare(a.Restart, b.Restart), cmp.Compare(a.Attempt, b.Attempt))
	})
	t.Aborts = aborts
	if len(aborts) > 0 {
		last := aborts[len(aborts)-1]
		t.LastAbort = &last
	}
}

// checkChildDedupe is the rule for a dedupe hit among the add_children of an
// Update of task parent: the i-th child found the live task child (created
// false) under its dedupe key. Only a child of parent may be found so — the
// update then adds it again idempotently; a hit on any other task is a
// FieldError naming add_children[i].dedupe_key that says nothing of that
// task (the caller may not be allowed to read it), and the update changes
// nothing.
func checkChildDedupe(i int, parent int64, child cks.Task, created bool) error {
	if created || (child.ParentID != nil && *child.ParentID == parent) {
		return nil
	}
	return &cks.FieldError{Field: fmt.Sprintf("add_children[%d].dedupe_key", i),
		Expected: fmt.Sprintf("a key no task but a child of task %d holds", parent)}
}

// ValidateStopReason is the one rule of a stop's reason (ADR 0020: a hold
// says why): text a backend stores, and more than white space. Every
// surface passes its FieldError on as it is.
func ValidateStopReason(reason string) error {
	return nonBlank("reason", reason, "a non-empty reason (why the task is held)")
}

// ValidateAnswer is the rule of an answer to a NEEDS_INPUT task's question.
func ValidateAnswer(text string) error { return nonBlank("text", text, "a non-empty answer") }

// ValidateQuestion is the rule of the question that parks a task in
// NEEDS_INPUT.
func ValidateQuestion(question string) error {
	return nonBlank("question", question, "a non-empty question")
}

// nonBlank refuses s, naming field, unless it is stored text that is more
// than white space.
func nonBlank(field, s, expected string) error {
	if err := cks.ValidateText(field, s); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return &cks.FieldError{Field: field, Expected: expected}
	}
	return nil
}

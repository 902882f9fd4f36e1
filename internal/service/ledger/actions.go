package ledger

import (
	"slices"

	"github.com/cks-dev/cks"
)

// verb is an operator verb as the transition table allows it: the move it
// makes, from the states it acts from (any state when from is empty) to
// state to; an edit, which moves nothing (to ""), acts from every state
// that is not terminal. frozen are states it never acts from, whatever the
// table allows.
type verb struct {
	action cks.TaskAction
	from   []cks.TaskState
	to     cks.TaskState
	frozen []cks.TaskState
}

// verbs are the operator verbs in the order of the cks.TaskAction
// constants. The service's operations refuse what admits refuses, so what
// Actions offers is what they do (ledger's TestTaskControl/*/TaskActionsAreTheServices).
var verbs = [...]verb{
	{action: cks.ActionStop, to: cks.TaskStopped},
	{action: cks.ActionStart, from: []cks.TaskState{cks.TaskStopped}, to: cks.TaskOpen},
	{action: cks.ActionCancel, to: cks.TaskCancelled},
	{action: cks.ActionAnswer, from: []cks.TaskState{cks.TaskNeedsInput}, to: cks.TaskOpen},
	{action: cks.ActionUpdate},
	// A question asked (NEEDS_INPUT) or a result to review (NEEDS_REVIEW,
	// REVIEWING) is about the task as it stands: a material edit needs it
	// stopped first.
	{action: cks.ActionUpdateMaterial, frozen: []cks.TaskState{cks.TaskNeedsInput, cks.TaskNeedsReview, cks.TaskReviewing}},
	{action: cks.ActionReview, from: []cks.TaskState{cks.TaskNeedsReview}, to: cks.TaskReviewing},
	// A failure or a cancel is a verdict on the work: only an operator
	// opens it again, with a fresh budget (COMPLETED is never reopened).
	{action: cks.ActionRetry, from: []cks.TaskState{cks.TaskFailed, cks.TaskCancelled}, to: cks.TaskOpen},
}

// admits reports whether v acts on a task in state st.
func (v verb) admits(st cks.TaskState) bool {
	switch {
	case slices.Contains(v.frozen, st), len(v.from) > 0 && !slices.Contains(v.from, st):
		return false
	case v.to == "":
		return !isTerminal(st)
	}
	return Allowed(st, v.to)
}

// Actions returns the operator verbs a task in state st admits now, in the
// order of the cks.TaskAction constants: the one rule of what may be done
// to a task, read from the transition table (for a terminal state, retry
// at most).
func Actions(st cks.TaskState) []cks.TaskAction {
	var out []cks.TaskAction
	for _, v := range verbs {
		if v.admits(st) {
			out = append(out, v.action)
		}
	}
	return out
}

// admits reports whether a task in state st admits action a (one of
// Actions(st)).
func admits(st cks.TaskState, a cks.TaskAction) bool {
	i := slices.IndexFunc(verbs[:], func(v verb) bool { return v.action == a })
	return i >= 0 && verbs[i].admits(st)
}

// Active lists the live states no operator is asked for, in lifecycle
// order: neither terminal nor dispatch-excluded (STOPPED waits for a start,
// NEEDS_INPUT for an answer). An operator view lists them as its other
// live work.
func Active() []cks.TaskState {
	var out []cks.TaskState
	for _, st := range All {
		if !isTerminal(st) && !isDispatchExcluded(st) {
			out = append(out, st)
		}
	}
	return out
}

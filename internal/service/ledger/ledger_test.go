package ledger

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
)

func TestTableCoversEveryState(t *testing.T) {
	table := transitions
	if len(All) != 12 || len(table) != 12 {
		t.Fatalf("%d states, %d table rows; want 12 and 12", len(All), len(table))
	}
	for _, from := range All {
		tos, ok := table[from]
		if !ok {
			t.Errorf("state %s has no row in the table", from)
		}
		// A terminal state is left only by an operator's retry, to where a
		// start would go; COMPLETED never.
		if isTerminal(from) {
			want := []cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked}
			if from == cks.TaskCompleted {
				want = nil
			}
			if !slices.Equal(tos, want) {
				t.Errorf("terminal %s may move to %v, want %v", from, tos, want)
			}
		}
		for _, to := range tos {
			if !Valid(to) {
				t.Errorf("%s → unknown state %q", from, to)
			}
			if to == from {
				t.Errorf("self transition %s → %s", from, to)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		from, to cks.TaskState
		ok       bool
	}{
		{cks.TaskOpen, cks.TaskClaimed, true},
		{cks.TaskClaimed, cks.TaskRunning, true},
		{cks.TaskRunning, cks.TaskCompleted, true},
		{cks.TaskStopped, cks.TaskOpen, true},
		{cks.TaskNeedsInput, cks.TaskOpen, true},
		{cks.TaskOpen, cks.TaskCompleted, false},
		{cks.TaskCompleted, cks.TaskOpen, false},
		{cks.TaskFailed, cks.TaskOpen, true},
		{cks.TaskCancelled, cks.TaskWaiting, true},
		{cks.TaskFailed, cks.TaskClaimed, false},
		{cks.TaskCancelled, cks.TaskStopped, false},
		{cks.TaskWaiting, cks.TaskClaimed, false},
		{cks.TaskNeedsInput, cks.TaskClaimed, false},
		{cks.TaskStopped, cks.TaskClaimed, false},
	}
	for _, c := range cases {
		err := check(c.from, c.to)
		if c.ok != (err == nil) {
			t.Errorf("Check(%s, %s) = %v, want ok=%v", c.from, c.to, err, c.ok)
		}
		if err != nil {
			if !errors.Is(err, cks.ErrConflict) {
				t.Errorf("Check(%s, %s) = %v, want ErrConflict", c.from, c.to, err)
			}
			if !strings.Contains(err.Error(), string(c.from)) || !strings.Contains(err.Error(), string(c.to)) {
				t.Errorf("Check error %q does not name both states", err)
			}
		}
	}
}

// TestDispatchExclusion pins ADR 0020's set and its key property: a state in it
// is never claimable, never terminal, and can be left only by an explicit
// operator or answer transition.
func TestDispatchExclusion(t *testing.T) {
	if got := DispatchExcluded; len(got) != 2 || got[0] != cks.TaskNeedsInput || got[1] != cks.TaskStopped {
		t.Fatalf("DispatchExcluded = %v, want [NEEDS_INPUT STOPPED]", got)
	}
	for _, s := range DispatchExcluded {
		if isTerminal(s) || Allowed(s, cks.TaskClaimed) {
			t.Errorf("%s is terminal or claimable", s)
		}
	}
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		base    time.Duration
		attempt int
		r       float64
		want    time.Duration
	}{
		{time.Second, 1, 0, time.Second},
		{time.Second, 2, 0, 2 * time.Second},
		{time.Second, 3, 0.5, 4*time.Second + 500*time.Millisecond},
		{time.Second, 1, 0.999999999, time.Second + 249999999},
		{time.Second, 40, 0, time.Hour},
		{time.Second, 13, 1, time.Hour + 15*time.Minute},
		{time.Second, 0, 0, time.Second},
		// CKS_RETRY_BACKOFF: another base, doubling the same way; 0 at once.
		{10 * time.Second, 3, 0, 40 * time.Second},
		{0, 5, 1, 0},
		{time.Hour, 1, 0, time.Hour},
		{59 * time.Minute, 32, 0, time.Hour}, // the shift overflows: capped
	}
	for _, c := range cases {
		if got := backoff(c.base, c.attempt, c.r); got != c.want {
			t.Errorf("Backoff(%v, %d, %v) = %v, want %v", c.base, c.attempt, c.r, got, c.want)
		}
	}
}

func TestCycle(t *testing.T) {
	graph := map[int64][]int64{1: {2}, 2: {3}, 3: nil, 4: {1, 3}}
	dependsOn := func(id int64) []int64 { return graph[id] }
	cases := []struct {
		id   int64
		deps []int64
		want []int64
	}{
		{5, []int64{1, 4}, nil},           // a new task closes nothing
		{3, []int64{4}, []int64{3, 4, 3}}, // shortest: 4 depends on 3 directly
		{3, []int64{1}, []int64{3, 1, 2, 3}},
		{2, []int64{1}, []int64{2, 1, 2}},
		{3, []int64{3}, []int64{3, 3}}, // self-dependency
		{1, []int64{3}, nil},
	}
	for _, c := range cases {
		if got := findCycle(c.id, c.deps, dependsOn); !slices.Equal(got, c.want) {
			t.Errorf("Cycle(%d, %v) = %v, want %v", c.id, c.deps, got, c.want)
		}
	}
}

// TestActions pins what Actions offers in each state (ADR 0020: stop
// anything live but a held task, start only a held one, answer a question,
// review a result, material edits not under a question or a review; issue
// 24: retry a failed or cancelled one, never a completed one).
func TestActions(t *testing.T) {
	const (
		stop, start, cancel, answer = cks.ActionStop, cks.ActionStart, cks.ActionCancel, cks.ActionAnswer
		update, material, review    = cks.ActionUpdate, cks.ActionUpdateMaterial, cks.ActionReview
		retry                       = cks.ActionRetry
	)
	want := map[cks.TaskState][]cks.TaskAction{
		cks.TaskOpen:        {stop, cancel, update, material},
		cks.TaskWaiting:     {stop, cancel, update, material},
		cks.TaskBlocked:     {stop, cancel, update, material},
		cks.TaskClaimed:     {stop, cancel, update, material},
		cks.TaskRunning:     {stop, cancel, update, material},
		cks.TaskNeedsReview: {stop, cancel, update, review},
		cks.TaskNeedsInput:  {stop, cancel, answer, update},
		cks.TaskReviewing:   {stop, cancel, update},
		cks.TaskStopped:     {start, cancel, update, material},
		cks.TaskCompleted:   nil,
		cks.TaskFailed:      {retry},
		cks.TaskCancelled:   {retry},
	}
	for _, st := range All {
		got := Actions(st)
		if !slices.Equal(got, want[st]) {
			t.Errorf("Actions(%s) = %v, want %v", st, got, want[st])
		}
		for _, v := range verbs {
			if admits(st, v.action) != slices.Contains(got, v.action) {
				t.Errorf("%s: admits(%s) disagrees with Actions %v", st, v.action, got)
			}
		}
	}
	if got := Active(); !slices.Equal(got, []cks.TaskState{cks.TaskOpen, cks.TaskWaiting, cks.TaskBlocked,
		cks.TaskClaimed, cks.TaskRunning, cks.TaskNeedsReview, cks.TaskReviewing}) {
		t.Errorf("Active() = %v", got)
	}
}

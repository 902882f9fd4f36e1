package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// TestFailReasonIsStoredAsText: a resolver error whose text the store
// would refuse (a NUL byte, invalid UTF-8, say from a command's output)
// still fails the task, with the reason as storable text (cks.ToText),
// on both backends; the task does not stay RUNNING until its lease expires.
func TestFailReasonIsStoredAsText(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		task := claim(t, st, cks.NewTask{Title: "binary error"}, "w")
		r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{}, errors.New("read \x00\xff: boom")
		})
		if err != nil || r.Outcome != worker.Failed || r.Task.State != cks.TaskOpen || r.Task.LastError != "read \uFFFD\uFFFD: boom" {
			t.Fatalf("report %+v (last error %q), %v", r, r.Task.LastError, err)
		}
	})
}

// TestLongOutcomesAreCut: a resolver's error or output longer than its
// field holds (cks.MaxTextLen) still ends the attempt, cut with a note of
// how much was cut, on both backends: the write is not refused for its
// length, leaving the task RUNNING until its lease expires.
func TestLongOutcomesAreCut(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		ex := worker.New(st.Tasks, worker.Options{Changes: st.Changes, Heartbeat: noHeartbeat})
		long := strings.Repeat("x", cks.MaxLongTextLen+100)
		task := claim(t, st, cks.NewTask{Title: "long error"}, "w")
		r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{}, errors.New(long)
		})
		if err != nil || r.Outcome != worker.Failed || len(r.Task.LastError) > cks.MaxLongTextLen ||
			!strings.HasSuffix(r.Task.LastError, "more bytes cut]") {
			t.Fatalf("failure: outcome %v, last error of %d bytes, %v", r.Outcome, len(r.Task.LastError), err)
		}
		task = claim(t, st, cks.NewTask{Title: "long output"}, "w")
		r, err = ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{Output: long}, nil
		})
		if err != nil || r.Task.State != cks.TaskCompleted || len(r.Task.Result) > cks.MaxLongTextLen {
			t.Fatalf("completion: state %s, result of %d bytes, %v", r.Task.State, len(r.Task.Result), err)
		}
	})
}

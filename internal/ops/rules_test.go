package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestBlankTextRulesAreTheStores: on both backends, a stop reason, an
// answer and a question of only white space are refused by the store itself
// with the one FieldError of its rule (ledger.ValidateStopReason,
// ValidateAnswer, ValidateQuestion), and an operation passes that error on
// as it is. (The store used to accept a blank answer or question that the
// surfaces refused, each with its own message.)
func TestBlankTextRulesAreTheStores(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		s := open(t, driver.WithClock(clock.NewFake(backendtest.T0)))
		open1, _ := backendtest.Into(t, s, cks.TaskOpen, "rules-open")
		asking, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "rules-input")
		running, tok := backendtest.Into(t, s, cks.TaskRunning, "rules-run")
		before := backendtest.State(t, s)

		want := func(what string, err error, rule error) {
			t.Helper()
			var fe *cks.FieldError
			if !errors.As(err, &fe) || err.Error() != rule.Error() {
				t.Errorf("%s: %v, want %v", what, err, rule)
			}
		}
		_, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: open1.ID, Actor: "op", Reason: " \t "})
		want("Stop with a blank reason", err, ledger.ValidateStopReason(""))
		_, err = s.Tasks.Answer(ctx, asking.ID, "op", "   ")
		want("Answer with a blank text", err, ledger.ValidateAnswer(""))
		_, err = s.Tasks.RequestInput(ctx, running.ID, tok, "\n")
		want("RequestInput with a blank question", err, ledger.ValidateQuestion(""))

		svc := &ops.Services{Tasks: s.Tasks}
		op := auth.WithLocalOperator(ctx)
		_, err = ops.StopTask.Do(op, svc, &cks.StopTaskInput{TaskID: open1.ID, Reason: " "})
		want("stop_task with a blank reason", err, ledger.ValidateStopReason(""))
		_, err = ops.AnswerTask.Do(op, svc, &cks.AnswerTaskInput{TaskID: asking.ID, Text: " "})
		want("answer_task with a blank text", err, ledger.ValidateAnswer(""))

		backendtest.DiffState(t, "refused blank text", before, backendtest.State(t, s))
	})
}

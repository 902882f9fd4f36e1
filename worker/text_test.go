package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/backendtest"
	"github.com/cks-dev/cks/store/storetest"
	"github.com/cks-dev/cks/worker"
)

// TestFailReasonIsStoredAsText: a resolver error whose text the store
// would refuse (a NUL byte, invalid UTF-8, say from a command's output)
// still fails the task, with the reason as storable text (store.ToText),
// on both backends; the task does not stay RUNNING until its lease expires.
func TestFailReasonIsStoredAsText(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open storetest.Opener) {
		st := open(t)
		ex := worker.New(st, worker.Options{Heartbeat: noHeartbeat})
		task := claim(t, st, store.NewTask{Title: "binary error"}, "w")
		r, err := ex.Run(ctx(t), task, func(context.Context, *worker.Attempt) (worker.Result, error) {
			return worker.Result{}, errors.New("read \x00\xff: boom")
		})
		if err != nil || r.Outcome != worker.Failed || r.Task.State != ledger.Open || r.Task.LastError != "read \uFFFD\uFFFD: boom" {
			t.Fatalf("report %+v (last error %q), %v", r, r.Task.LastError, err)
		}
	})
}

package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestCountTasks: on both backends, count_tasks answers every state the
// filter names (every state without one), 0 included, with their total;
// stopped_longer_than counts the stale stops as list_tasks lists them; a
// state list_tasks refuses is refused in its words.
func TestCountTasks(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := auth.WithLocalOperator(context.Background())
		svc := &ops.Services{Tasks: s.Tasks, Clock: c}
		for _, st := range []cks.TaskState{cks.TaskOpen, cks.TaskOpen, cks.TaskStopped, cks.TaskCompleted} {
			backendtest.Into(t, s, st, "count-"+strings.ToLower(string(st)))
		}
		c.Advance(48 * time.Hour)
		backendtest.Into(t, s, cks.TaskStopped, "count-fresh")

		all, err := ops.CountTasks.Do(ctx, svc, &cks.CountTasksInput{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[cks.TaskState]int{}
		for _, st := range ledger.All {
			want[st] = 0
		}
		want[cks.TaskOpen], want[cks.TaskStopped], want[cks.TaskCompleted] = 2, 2, 1
		if !maps.Equal(all.Counts, want) || all.Total != 5 {
			t.Errorf("count_tasks {} = %+v, want %v, total 5", all, want)
		}

		some, err := ops.CountTasks.Do(ctx, svc, &cks.CountTasksInput{State: []string{"stopped", "FAILED"}})
		if err != nil || !maps.Equal(some.Counts, map[cks.TaskState]int{cks.TaskStopped: 2, cks.TaskFailed: 0}) || some.Total != 2 {
			t.Errorf("count_tasks STOPPED, FAILED = %+v, %v", some, err)
		}
		stale, err := ops.CountTasks.Do(ctx, svc, &cks.CountTasksInput{StoppedLongerThan: "24h"})
		if err != nil || !maps.Equal(stale.Counts, map[cks.TaskState]int{cks.TaskStopped: 1}) || stale.Total != 1 {
			t.Errorf("count_tasks stopped_longer_than 24h = %+v, %v; want 1 STOPPED", stale, err)
		}
		page, err := ops.ListTasks.Do(ctx, svc, &cks.ListTasksInput{StoppedLongerThan: "24h"})
		if err != nil || len(page.Tasks) != stale.Total {
			t.Errorf("list_tasks stopped_longer_than 24h = %d tasks, %v; count_tasks %d", len(page.Tasks), err, stale.Total)
		}

		_, err = ops.CountTasks.Do(ctx, svc, &cks.CountTasksInput{State: []string{"DONE"}})
		_, listErr := ops.ListTasks.Do(ctx, svc, &cks.ListTasksInput{State: []string{"DONE"}})
		if err == nil || listErr == nil || err.Error() != listErr.Error() {
			t.Errorf("count_tasks DONE: %v; list_tasks says %v", err, listErr)
		}
	})
}

// TestGetTaskActions: get_task lists the verbs the ledger admits in the
// task's state, an empty list (not none) for a COMPLETED task (a FAILED or
// CANCELLED one admits retry).
func TestGetTaskActions(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t, driver.WithClock(clock.NewFake(backendtest.T0)))
		ctx := auth.WithLocalOperator(context.Background())
		svc := &ops.Services{Tasks: s.Tasks}
		for _, st := range ledger.All {
			task, _ := backendtest.Into(t, s, st, "actions-"+strings.ToLower(string(st)))
			got, err := ops.GetTask.Do(ctx, svc, &cks.TaskInput{TaskID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			if want := ledger.Actions(st); !slices.Equal(got.Actions, want) || got.Actions == nil {
				t.Errorf("get_task of a %s task: actions %#v, want %v", st, got.Actions, want)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(ledger.Actions(st)) == 0 && !strings.Contains(string(b), `"actions":[]`) {
				t.Errorf("get_task of a %s task encodes no empty actions: %s", st, b)
			}
		}
	})
}

// TestBulkOps: the bulk operations take list_tasks' filter (its state, type
// and stopped_longer_than, relative to the services' clock) or ids, not
// both, and answer the ledger's outcomes. Both backends.
func TestBulkOps(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := auth.WithLocalOperator(context.Background())
		svc := &ops.Services{Tasks: s.Tasks, Clock: c}
		var ids []int64
		for range 3 {
			ids = append(ids, backendtest.MustEnqueue(t, s, cks.NewTask{Type: "bulk"}).ID)
		}
		other := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "other"})
		res, err := ops.BulkStopTasks.Do(ctx, svc, &cks.BulkStopTasksInput{Reason: "freeze",
			TaskSelection: cks.TaskSelection{State: []string{"open"}, Type: []string{"bulk"}}, AbortWait: cks.AbortWait{Wait: new(false)}})
		if err != nil || res.Done != 3 || res.Action != cks.ActionStop {
			t.Fatalf("bulk stop by filter: %+v, %v", res, err)
		}
		// Held an hour: stopped_longer_than 1h selects them, and only them.
		c.Advance(time.Hour)
		backendtest.MustEnqueue(t, s, cks.NewTask{Type: "bulk"}) // not stopped
		res, err = ops.BulkStartTasks.Do(ctx, svc, &cks.BulkTasksInput{TaskSelection: cks.TaskSelection{StoppedLongerThan: "1h"}})
		var got []int64
		for _, o := range res.Tasks {
			got = append(got, o.TaskID)
		}
		if err != nil || res.Done != 3 || !slices.Equal(got, ids) {
			t.Fatalf("bulk start of the tasks stopped an hour: %+v, %v", res, err)
		}
		res, err = ops.BulkCancelTasks.Do(ctx, svc, &cks.BulkTasksInput{TaskSelection: cks.TaskSelection{TaskIDs: []int64{other.ID}}})
		if err != nil || res.Done != 1 || res.Tasks[0].State != cks.TaskCancelled {
			t.Fatalf("bulk cancel by id: %+v, %v", res, err)
		}
		for _, tc := range []struct {
			name  string
			in    cks.BulkTasksInput
			field string
		}{
			{"ids and a filter", cks.BulkTasksInput{TaskSelection: cks.TaskSelection{TaskIDs: ids, State: []string{"OPEN"}}}, "task_ids"},
			{"a bad state", cks.BulkTasksInput{TaskSelection: cks.TaskSelection{State: []string{"DONE"}}}, "state"},
			{"a bad duration", cks.BulkTasksInput{TaskSelection: cks.TaskSelection{StoppedLongerThan: "soon"}}, "stopped_longer_than"},
			{"a limit past the bound", cks.BulkTasksInput{TaskSelection: cks.TaskSelection{State: []string{"OPEN"}, Limit: ledger.MaxBulk + 1}}, "limit"},
		} {
			_, err := ops.BulkRetryTasks.Do(ctx, svc, &tc.in)
			if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != tc.field {
				t.Errorf("%s: %v, want a FieldError naming %s", tc.name, err, tc.field)
			}
		}
		if ops.BulkStopTasks.Wait(&cks.BulkStopTasksInput{AbortWait: cks.AbortWait{Deadline: "2s"}}) != 2*time.Second {
			t.Error("a bulk stop does not extend the surfaces' deadlines by its abort wait")
		}
	})
}

// TestTaskCallsTellTheBus: on both backends, a call that changes a task
// (create, stop, mark running) publishes events.TasksChanged on the
// Services' Bus, so the studio's board follows it; a read and a lease
// renewal (touch_task) publish nothing, and a refused call nothing either.
func TestTaskCallsTellTheBus(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		ctx := auth.WithLocalOperator(context.Background())
		bus := &events.Bus{}
		ch, done := bus.SubscribeBuffered(64)
		defer done()
		svc := &ops.Services{Tasks: s.Tasks, Clock: c, Bus: bus}
		running, tok := backendtest.Into(t, s, cks.TaskRunning, "bus")
		claimed, ctok := backendtest.Into(t, s, cks.TaskClaimed, "bus")
		heard := func() int {
			n := 0
			for {
				select {
				case e := <-ch:
					if e.Type == events.TasksChanged {
						n++
					}
				default:
					return n
				}
			}
		}
		for _, tc := range []struct {
			name string
			call func() error
			want int
		}{
			{"list_tasks", func() error { _, err := ops.ListTasks.Do(ctx, svc, &cks.ListTasksInput{}); return err }, 0},
			{"get_task", func() error { _, err := ops.GetTask.Do(ctx, svc, &cks.TaskInput{TaskID: running.ID}); return err }, 0},
			{"touch_task", func() error {
				_, err := ops.TouchTask.Do(ctx, svc, &cks.LeaseInput{TaskID: running.ID, LeaseToken: tok})
				return err
			}, 0},
			{"create_task", func() error {
				_, err := ops.CreateTask.Do(ctx, svc, &cks.NewTask{Type: "bus", Title: "new"})
				return err
			}, 1},
			{"mark_running", func() error {
				_, err := ops.MarkRunning.Do(ctx, svc, &cks.LeaseInput{TaskID: claimed.ID, LeaseToken: ctok})
				return err
			}, 1},
			{"stop_task", func() error {
				_, err := ops.StopTask.Do(ctx, svc, &cks.StopTaskInput{TaskID: running.ID, Reason: "hold", AbortWait: cks.AbortWait{Wait: new(false)}})
				return err
			}, 1},
			{"start_task refused (not STOPPED)", func() error {
				if _, err := ops.StartTask.Do(ctx, svc, &cks.TaskReasonInput{TaskID: claimed.ID}); err == nil {
					return errors.New("start of a RUNNING task accepted")
				}
				return nil
			}, 0},
		} {
			if err := tc.call(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := heard(); got != tc.want {
				t.Errorf("%s: %d %q events, want %d", tc.name, got, events.TasksChanged, tc.want)
			}
		}
	})
}

package backendtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/ledger"
)

// EventsHaveTheirTasks is what stands in for the foreign key cks_task_events
// no longer has (issue 14): after a concurrent mixed load on the ledger over
// d — enqueues (some with a dependency or a parent), claims, completions,
// retryable and final failures, cancellations, and reclaims of expired
// leases — every event's task exists (orphans, a raw count of the
// driver's own database, is 0), and every task has at least its creation
// event. The ledger is the one writer of events, each for a task it
// inserted or locked in the same transaction; no path deletes a task.
func EventsHaveTheirTasks(t *testing.T, d driver.Driver, orphans func(t testing.TB) int) {
	t.Helper()
	s := ledger.NewService(d, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const workers, rounds = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- eventLoad(ctx, s, fmt.Sprintf("w%d", w), rounds)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// What is still leased is reclaimed once more (expired by the clock
	// an hour ahead), after the load.
	if _, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	if n := orphans(t); n != 0 {
		t.Fatalf("%d events of no task", n)
	}
	page, err := s.ListTasks(ctx, cks.TaskFilter{Limit: cks.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) < workers*rounds {
		t.Fatalf("%d tasks, want at least %d", len(page.Tasks), workers*rounds)
	}
	for _, task := range page.Tasks {
		full, err := s.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if evs := full.Events; len(evs) == 0 || evs[0].From != "" {
			t.Errorf("task %d (%s): events %+v, want its creation first", task.ID, task.State, full.Events)
		}
	}
}

// eventLoad is one worker of EventsHaveTheirTasks: each round enqueues
// three tasks (one depending on the first, one its child), claims, and
// ends what it claimed by completing, failing or abandoning it, cancels
// the dependant now and then, and reclaims expired leases.
func eventLoad(ctx context.Context, s *ledger.Service, worker string, rounds int) error {
	tolerated := func(err error) bool {
		return err == nil || errors.Is(err, cks.ErrConflict) || errors.Is(err, cks.ErrLeaseLost) ||
			errors.Is(err, cks.ErrNotFound)
	}
	for r := range rounds {
		first, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, MaxAttempts: 2})
		if err != nil {
			return err
		}
		dep, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, DependsOn: []int64{first.ID}})
		if err != nil {
			return err
		}
		if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "load", CreatedBy: worker, ParentID: &first.ID}); err != nil {
			return err
		}
		if r%4 == 3 {
			if _, err := s.Cancel(ctx, dep.ID, worker, "load"); !tolerated(err) {
				return err
			}
		}
		claimed, err := s.Claim(ctx, worker, nil, 3, time.Minute)
		if err != nil {
			return err
		}
		for i, c := range claimed {
			switch (r + i) % 5 {
			case 0, 1:
				_, err = s.Complete(ctx, c.Task.ID, c.LeaseToken, false, "ok")
			case 2:
				_, err = s.Fail(ctx, c.Task.ID, c.LeaseToken, true, "retry")
			case 3:
				_, err = s.Fail(ctx, c.Task.ID, c.LeaseToken, false, "final")
			default:
				// Abandoned: the reaper reclaims it below.
			}
			if !tolerated(err) {
				return err
			}
		}
		if r%5 == 4 {
			if _, err := s.ReclaimExpired(ctx, time.Now().Add(time.Hour), 0); err != nil {
				return err
			}
		}
	}
	return nil
}

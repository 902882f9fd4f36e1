// Package schedule holds the rules of schedules (issue 42 item 4): a named,
// persistent rule that creates a task from its template at each slot of a
// cron expression read in a time zone, and what happens to the slots no hub
// fired in time (the misfire policy). Service creates, reads, pauses,
// resumes, triggers and deletes schedules and fires their due slots; Runner
// fires them on the elected leader hub, woken by a timer at the next slot.
//
// A slot fires exactly once: the fire reads the schedule's row locked,
// decides from its mark (last_slot) which slot is due, and creates the task
// and moves the mark in one transaction of the ledger (ledger's
// EnqueueWith) — so two hubs that both believe they lead (a failover in
// progress) fire the slot once between them, and a hub killed mid-fire
// leaves the slot unfired for the next leader. The task's dedupe key names
// the slot (schedule:NAME@TIME, used once ever) as a second guard.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// Enqueuer creates tasks in the transaction that records them
// (ledger.Service).
type Enqueuer interface {
	EnqueueWith(ctx context.Context,
		decide func(ctx context.Context, ex driver.Executor, now time.Time) ([]cks.NewTask, error),
		record func(ctx context.Context, ex driver.Executor, now time.Time, created []cks.CreatedTask) error) error
}

// Service is the schedules of one database.
type Service struct {
	db    driver.Driver
	tasks Enqueuer
	clock clock.Clock
}

// New returns the schedules over db, creating their tasks through tasks
// (the ledger). c (nil: the system's) stamps creations, pauses and resumes
// and places the next runs; a fire and a trigger take the ledger's time,
// the same clock in a backend.
func New(db driver.Driver, tasks Enqueuer, c clock.Clock) *Service {
	if c == nil {
		c = clock.System{}
	}
	return &Service{db: db, tasks: tasks, clock: c}
}

// Validate reports the first field of n that Create refuses (name, cron,
// time_zone, misfire, task.FIELD), and returns n with its defaults filled in
// (time zone UTC, misfire skip, the task's payload and max attempts).
func Validate(n cks.NewSchedule) (cks.NewSchedule, error) {
	if err := cks.ValidateScheduleName("name", n.Name); err != nil {
		return n, err
	}
	if n.TimeZone == "" {
		n.TimeZone = "UTC"
	}
	if _, err := parse(n.Cron, n.TimeZone); err != nil {
		return n, err
	}
	if err := validateMisfire(n.Misfire); err != nil {
		return n, err
	}
	if n.Misfire == "" {
		n.Misfire = cks.MisfireSkip
	}
	if err := cks.ValidateText("created_by", n.CreatedBy); err != nil {
		return n, err
	}
	var err error
	n.Task, err = n.Task.Validate("task")
	return n, err
}

// validateMisfire reports a FieldError naming misfire unless p is a misfire
// policy ("" is skip).
func validateMisfire(p string) error {
	if p == "" || p == cks.MisfireSkip || p == cks.MisfireRunOnce {
		return nil
	}
	return &cks.FieldError{Field: "misfire", Expected: fmt.Sprintf("one of %s, %s, got %q", cks.MisfireSkip, cks.MisfireRunOnce, p)}
}

// notFound is the error of a schedule that does not exist.
func notFound(name string) error { return fmt.Errorf("no schedule %q: %w", name, cks.ErrNotFound) }

// Create stores schedule n, running (or paused when n.Paused): its first
// slot is the first after now. A name already taken is ErrConflict.
func (s *Service) Create(ctx context.Context, n cks.NewSchedule) (cks.Schedule, error) {
	n, err := Validate(n)
	if err != nil {
		return cks.Schedule{}, err
	}
	task, err := json.Marshal(n.Task)
	if err != nil {
		return cks.Schedule{}, fmt.Errorf("schedule %s: task: %w", n.Name, err)
	}
	now := driver.Time(s.clock.Now())
	r := driver.ScheduleRow{Name: n.Name, Cron: n.Cron, TimeZone: n.TimeZone, Misfire: n.Misfire, Task: string(task),
		Paused: n.Paused, CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now}
	if n.Paused {
		r.PausedBy = n.CreatedBy
	}
	err = s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		if err := ex.ScheduleInsert(ctx, r); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicSchedules)
	})
	if errors.Is(err, driver.ErrUniqueViolation) {
		return cks.Schedule{}, fmt.Errorf("a schedule named %q exists: %w", n.Name, cks.ErrConflict)
	}
	if err != nil {
		return cks.Schedule{}, fmt.Errorf("create schedule %s: %w", n.Name, err)
	}
	return s.view(r, now)
}

// Get returns the schedule name, with its next slots.
func (s *Service) Get(ctx context.Context, name string) (cks.Schedule, error) {
	rs, err := s.db.Executor().ScheduleGet(ctx, driver.ScheduleGetParams{Name: name})
	if err != nil {
		return cks.Schedule{}, fmt.Errorf("get schedule %s: %w", name, err)
	}
	if len(rs) == 0 {
		return cks.Schedule{}, notFound(name)
	}
	return s.view(rs[0], s.clock.Now())
}

// List returns every schedule, by name, each with its next slots.
func (s *Service) List(ctx context.Context) ([]cks.Schedule, error) {
	rs, err := s.db.Executor().ScheduleList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	now := s.clock.Now()
	out := make([]cks.Schedule, 0, len(rs))
	for _, r := range rs {
		v, err := s.view(r, now)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Pause stops the schedule name from firing until Resume; actor is
// recorded as who paused it. Pausing a paused schedule changes nothing.
func (s *Service) Pause(ctx context.Context, name, actor string) (cks.Schedule, error) {
	return s.change(ctx, name, func(r *driver.ScheduleRow, now time.Time) bool {
		if r.Paused {
			return false
		}
		r.Paused, r.PausedBy = true, actor
		return true
	})
}

// Resume lets the paused schedule name fire again, from the first slot
// after now: the slots that passed while it was paused are not owed, at
// either misfire policy. Resuming a running schedule changes nothing.
func (s *Service) Resume(ctx context.Context, name string) (cks.Schedule, error) {
	return s.change(ctx, name, func(r *driver.ScheduleRow, now time.Time) bool {
		if !r.Paused {
			return false
		}
		r.Paused, r.PausedBy = false, ""
		// The mark moves past the slots of the pause: to the latest slot
		// by now (a stored expression parses; one that no longer did
		// would leave the mark, and its fire would say so).
		if w, err := parse(r.Cron, r.TimeZone); err == nil {
			if last := w.latest(mark(*r), now); !last.IsZero() {
				r.LastSlot = last
			}
		}
		return true
	})
}

// change applies edit to the schedule name's row, read locked, and writes it
// with a notification when edit reports a change.
func (s *Service) change(ctx context.Context, name string, edit func(r *driver.ScheduleRow, now time.Time) bool) (cks.Schedule, error) {
	var out driver.ScheduleRow
	now := driver.Time(s.clock.Now())
	err := s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		rs, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: name, Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return notFound(name)
		}
		out = rs[0]
		if !edit(&out, now) {
			return nil
		}
		out.UpdatedAt = now
		if _, err := ex.ScheduleUpdate(ctx, out); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicSchedules)
	})
	if err != nil {
		return cks.Schedule{}, fmt.Errorf("schedule %s: %w", name, err)
	}
	return s.view(out, now)
}

// Delete deletes the schedule name. The tasks it created stay.
func (s *Service) Delete(ctx context.Context, name string) error {
	return s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		n, err := ex.ScheduleDelete(ctx, name)
		if err != nil {
			return fmt.Errorf("delete schedule %s: %w", name, err)
		}
		if n == 0 {
			return notFound(name)
		}
		return ex.Notify(ctx, cks.TopicSchedules)
	})
}

// Trigger fires the schedule name now, once, by actor, paused or not: a
// task from its template, outside its slots (its mark does not move, so
// the next slot fires as it would have).
func (s *Service) Trigger(ctx context.Context, name, actor string) (cks.ScheduleFired, error) {
	var (
		row  driver.ScheduleRow
		task cks.Task
	)
	err := s.tasks.EnqueueWith(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) ([]cks.NewTask, error) {
		rs, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: name, Lock: driver.LockUpdate})
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, notFound(name)
		}
		row = rs[0]
		n, err := newTask(row, actor, "", now)
		return []cks.NewTask{n}, err
	}, func(ctx context.Context, ex driver.Executor, now time.Time, created []cks.CreatedTask) error {
		task = created[0].Task
		row.LastFiredAt, row.LastTaskID, row.UpdatedAt = now, task.ID, now
		if _, err := ex.ScheduleUpdate(ctx, row); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicSchedules)
	})
	if err != nil {
		return cks.ScheduleFired{}, fmt.Errorf("trigger schedule %s: %w", name, err)
	}
	v, err := s.view(row, row.LastFiredAt)
	return cks.ScheduleFired{Schedule: v, Task: task}, err
}

// Fired is what one fire did.
type Fired struct {
	// Slot is the slot dealt with (zero: none was due).
	Slot time.Time
	// Task is the task the slot created (zero when the slot was skipped,
	// or none was due); Created false when its dedupe key found the task
	// of an earlier fire of the slot.
	Task    cks.Task
	Created bool
	// Skipped says the slot was missed and the misfire policy skip let it
	// go.
	Skipped bool
}

// fire deals with the due slot of the schedule name, if it has one: the
// latest slot after its mark and not after now. On time (within
// cks.MisfireGrace of the slot) or at misfire run_once, it creates one task
// for that slot — one for all the slots missed since the mark; a slot
// missed at misfire skip is let go. Either way the mark moves to the slot,
// in the transaction that creates the task. A paused or deleted schedule,
// or one with no slot due, does nothing.
func (s *Service) fire(ctx context.Context, name string) (Fired, error) {
	var (
		out Fired
		row driver.ScheduleRow
	)
	err := s.tasks.EnqueueWith(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) ([]cks.NewTask, error) {
		out = Fired{}
		rs, err := ex.ScheduleGet(ctx, driver.ScheduleGetParams{Name: name, Lock: driver.LockUpdate})
		if err != nil || len(rs) == 0 || rs[0].Paused {
			return nil, err
		}
		row = rs[0]
		w, err := parse(row.Cron, row.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("stored schedule %s: %w", name, err)
		}
		if out.Slot = w.latest(mark(row), now); out.Slot.IsZero() {
			return nil, nil
		}
		if row.Misfire == cks.MisfireSkip && now.Sub(out.Slot) > cks.MisfireGrace {
			out.Skipped = true
			return nil, nil
		}
		n, err := newTask(row, "schedule:"+row.Name, slotKey(row.Name, out.Slot), out.Slot)
		return []cks.NewTask{n}, err
	}, func(ctx context.Context, ex driver.Executor, now time.Time, created []cks.CreatedTask) error {
		if out.Slot.IsZero() {
			return nil
		}
		row.LastSlot, row.UpdatedAt = out.Slot, now
		if len(created) > 0 {
			out.Task, out.Created = created[0].Task, created[0].Created
			row.LastFiredAt, row.LastTaskID = now, out.Task.ID
		}
		_, err := ex.ScheduleUpdate(ctx, row)
		return err
	})
	if err != nil {
		return Fired{}, fmt.Errorf("fire schedule %s: %w", name, err)
	}
	return out, nil
}

// fireDue fires every running schedule that has a slot due (fire), and
// returns the earliest slot still to come among them (zero when none has
// one), for the runner's timer.
func (s *Service) fireDue(ctx context.Context) (time.Time, error) {
	rs, err := s.db.Executor().ScheduleList(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("list schedules: %w", err)
	}
	now := s.clock.Now()
	var next time.Time
	var errs []error
	for _, r := range rs {
		if r.Paused {
			continue
		}
		w, err := parse(r.Cron, r.TimeZone)
		if err != nil {
			errs = append(errs, fmt.Errorf("stored schedule %s: %w", r.Name, err))
			continue
		}
		after := mark(r)
		if !w.latest(after, now).IsZero() {
			if _, err := s.fire(ctx, r.Name); err != nil {
				errs = append(errs, err)
			}
			after = now
		}
		if n := w.next(maxTime(after, now)); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, errors.Join(errs...)
}

// mark is the time a schedule's next slot follows: its last slot, or its
// creation before the first.
func mark(r driver.ScheduleRow) time.Time {
	if r.LastSlot.IsZero() {
		return r.CreatedAt
	}
	return r.LastSlot
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// slotKey is the dedupe key of a schedule's slot.
func slotKey(name string, slot time.Time) string {
	return "schedule:" + name + "@" + slot.UTC().Format(time.RFC3339)
}

// newTask is the task r's template makes for a fire by actor at slot (the
// trigger's time for a trigger), with dedupe key key; its metadata names
// the schedule and the slot.
func newTask(r driver.ScheduleRow, actor, key string, slot time.Time) (cks.NewTask, error) {
	var t cks.ScheduleTask
	if err := json.Unmarshal([]byte(r.Task), &t); err != nil {
		return cks.NewTask{}, fmt.Errorf("stored schedule %s: task: %w", r.Name, err)
	}
	n := t.NewTask(actor, key)
	meta, err := json.Marshal(map[string]string{"schedule": r.Name, "slot": slot.UTC().Format(time.RFC3339)})
	if err != nil {
		return cks.NewTask{}, err
	}
	n.Metadata = meta
	return n, nil
}

// view is r as the operations answer it at now: its template decoded, its
// next slots (none while paused).
func (s *Service) view(r driver.ScheduleRow, now time.Time) (cks.Schedule, error) {
	out := cks.Schedule{Name: r.Name, Cron: r.Cron, TimeZone: r.TimeZone, Misfire: r.Misfire, Paused: r.Paused,
		PausedBy: r.PausedBy, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		LastTaskID: r.LastTaskID, NextRuns: []time.Time{}}
	if err := json.Unmarshal([]byte(r.Task), &out.Task); err != nil {
		return out, fmt.Errorf("stored schedule %s: task: %w", r.Name, err)
	}
	if !r.LastSlot.IsZero() {
		out.LastSlot = new(r.LastSlot)
	}
	if !r.LastFiredAt.IsZero() {
		out.LastFiredAt = new(r.LastFiredAt)
	}
	if r.Paused {
		return out, nil
	}
	w, err := parse(r.Cron, r.TimeZone)
	if err != nil {
		return out, fmt.Errorf("stored schedule %s: %w", r.Name, err)
	}
	out.NextRuns = w.nextN(maxTime(mark(r), now), cks.ScheduleNextRuns)
	return out, nil
}

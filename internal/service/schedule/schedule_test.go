package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/schedule"
	"github.com/cks-dev/cks/internal/waitfor"
)

// TestMain fails the run when a goroutine its tests started (a runner, a
// store's) outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is backendtest.T0, 2026-11-30 12:00 UTC, a Monday.
var t0 = backendtest.T0

// every5 is a schedule every five minutes of type "report".
func every5(name, misfire string) cks.NewSchedule {
	return cks.NewSchedule{Name: name, Cron: "*/5 * * * *", Misfire: misfire, CreatedBy: "alice",
		Task: cks.ScheduleTask{Type: "report", Title: "report of " + name, Payload: json.RawMessage(`{"k":1}`), Priority: 3, MaxAttempts: 2}}
}

func mustCreate(t *testing.T, s *backend.Backend, n cks.NewSchedule) cks.Schedule {
	t.Helper()
	got, err := s.Schedules.Create(backendtest.Ctx(t), n)
	if err != nil {
		t.Fatalf("create %s: %v", n.Name, err)
	}
	return got
}

func mustFire(t *testing.T, s *backend.Backend, name string) schedule.Fired {
	t.Helper()
	got, err := s.Schedules.Fire(backendtest.Ctx(t), name)
	if err != nil {
		t.Fatalf("fire %s: %v", name, err)
	}
	return got
}

// tasksOf returns the tasks of type typ, oldest first.
func tasksOf(t *testing.T, s *backend.Backend, typ string) []cks.Task {
	t.Helper()
	p, err := s.Tasks.ListTasks(backendtest.Ctx(t), cks.TaskFilter{Types: []string{typ}, Limit: cks.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return p.Tasks
}

func mustGet(t *testing.T, s *backend.Backend, name string) cks.Schedule {
	t.Helper()
	got, err := s.Schedules.Get(backendtest.Ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSchedules runs the schedules' behaviours on both backends.
func TestSchedules(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		// A slot fires once: at its time one task from the template, with
		// the slot's dedupe key and the schedule in its metadata; again at
		// the same slot, nothing; the mark and last fire say so.
		"FiresEachSlotOnce": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0.Add(30 * time.Second))
			s := open(t, driver.WithClock(c))
			created := mustCreate(t, s, every5("five", ""))
			if created.Misfire != cks.MisfireSkip || created.TimeZone != "UTC" || created.LastSlot != nil ||
				len(created.NextRuns) != 5 || !created.NextRuns[0].Equal(t0.Add(5*time.Minute)) || !created.NextRuns[4].Equal(t0.Add(25*time.Minute)) {
				t.Fatalf("created = %+v; want skip, UTC, no slot yet, next runs 12:05 … 12:25", created)
			}
			if f := mustFire(t, s, "five"); !f.Slot.IsZero() {
				t.Fatalf("fire before the first slot = %+v; want nothing", f)
			}
			c.Set(t0.Add(5*time.Minute + 200*time.Millisecond))
			f := mustFire(t, s, "five")
			if !f.Slot.Equal(t0.Add(5*time.Minute)) || !f.Created || f.Skipped {
				t.Fatalf("fire at 12:05 = %+v; want slot 12:05, a task created", f)
			}
			task := f.Task
			if task.Title != "report of five" || task.Priority != 3 || task.MaxAttempts != 2 || !jsonEq(task.Payload, `{"k":1}`) ||
				task.DedupeKey != "schedule:five@2026-11-30T12:05:00Z" || task.State != cks.TaskOpen ||
				!jsonEq(task.Metadata, `{"schedule":"five","slot":"2026-11-30T12:05:00Z"}`) {
				t.Fatalf("task = %+v; want the template's, keyed by the slot", task)
			}
			for range 3 {
				if f := mustFire(t, s, "five"); !f.Slot.IsZero() {
					t.Fatalf("a second fire of the slot = %+v; want nothing", f)
				}
			}
			got := mustGet(t, s, "five")
			if got.LastSlot == nil || !got.LastSlot.Equal(t0.Add(5*time.Minute)) || got.LastTaskID != task.ID ||
				got.LastFiredAt == nil || !got.NextRuns[0].Equal(t0.Add(10*time.Minute)) {
				t.Fatalf("after the fire: %+v", got)
			}
			c.Set(t0.Add(10 * time.Minute))
			if f := mustFire(t, s, "five"); !f.Slot.Equal(t0.Add(10*time.Minute)) || !f.Created {
				t.Fatalf("fire at 12:10 = %+v", f)
			}
			if n := len(tasksOf(t, s, "report")); n != 2 {
				t.Fatalf("%d tasks after two slots, want 2", n)
			}
		},
		// Hubs that all believe they lead (a failover in progress), on
		// handles of their own, fire each slot once between them.
		"ConcurrentFiresFireOnce": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0)
			hubs := []*backend.Backend{open(t, driver.WithClock(c)), open(t, driver.WithClock(c)), open(t, driver.WithClock(c))}
			mustCreate(t, hubs[0], every5("race", cks.MisfireRunOnce))
			for slot := 1; slot <= 3; slot++ {
				c.Set(t0.Add(time.Duration(slot) * 5 * time.Minute))
				var wg sync.WaitGroup
				var mu sync.Mutex
				made := 0
				for i := range 12 {
					wg.Go(func() {
						f, err := hubs[i%len(hubs)].Schedules.Fire(context.Background(), "race")
						if err != nil {
							t.Error(err)
						}
						mu.Lock()
						if f.Created {
							made++
						}
						mu.Unlock()
					})
				}
				wg.Wait()
				if made != 1 {
					t.Fatalf("slot %d: %d fires created a task, want 1", slot, made)
				}
			}
			if n := len(tasksOf(t, hubs[0], "report")); n != 3 {
				t.Fatalf("%d tasks after three slots, want 3", n)
			}
		},
		// After a downtime of an hour: at run_once one task for the
		// twelve missed slots, for the latest; at skip none, the mark moved
		// past them, and the next slot fires on time.
		"MisfireAfterDowntime": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0)
			s := open(t, driver.WithClock(c))
			mustCreate(t, s, every5("skipper", cks.MisfireSkip))
			once := every5("oncer", cks.MisfireRunOnce)
			once.Task.Type = "once"
			mustCreate(t, s, once)
			c.Set(t0.Add(time.Hour + 2*time.Minute)) // 12:05 … 13:00 missed
			f := mustFire(t, s, "oncer")
			if !f.Created || !f.Slot.Equal(t0.Add(time.Hour)) || f.Task.DedupeKey != "schedule:oncer@2026-11-30T13:00:00Z" {
				t.Fatalf("run_once after downtime = %+v; want one task for 13:00", f)
			}
			if f := mustFire(t, s, "oncer"); !f.Slot.IsZero() {
				t.Fatalf("run_once fired again: %+v", f)
			}
			f = mustFire(t, s, "skipper")
			if !f.Skipped || f.Created || !f.Slot.Equal(t0.Add(time.Hour)) {
				t.Fatalf("skip after downtime = %+v; want 13:00 skipped", f)
			}
			if got := mustGet(t, s, "skipper"); got.LastSlot == nil || !got.LastSlot.Equal(t0.Add(time.Hour)) || got.LastFiredAt != nil {
				t.Fatalf("skipper after the skip: %+v; want its mark at 13:00 and no fire", got)
			}
			if n := len(tasksOf(t, s, "report")); n != 0 {
				t.Fatalf("skip made %d tasks", n)
			}
			c.Set(t0.Add(time.Hour + 5*time.Minute + time.Second))
			if f := mustFire(t, s, "skipper"); !f.Created || !f.Slot.Equal(t0.Add(time.Hour+5*time.Minute)) {
				t.Fatalf("skip's next slot = %+v; want 13:05 fired", f)
			}
			// Within the grace a late slot is on time at skip too.
			c.Set(t0.Add(time.Hour + 10*time.Minute + cks.MisfireGrace))
			if f := mustFire(t, s, "skipper"); !f.Created {
				t.Fatalf("a slot fired within the grace = %+v; want a task", f)
			}
			if n := len(tasksOf(t, s, "once")); n != 1 {
				t.Fatalf("run_once made %d tasks, want 1", n)
			}
		},
		// A paused schedule fires nothing and lists no next runs; resumed,
		// it owes nothing of the pause (either policy) and fires its next
		// slot.
		"PauseResume": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0)
			s := open(t, driver.WithClock(c))
			ctx := backendtest.Ctx(t)
			mustCreate(t, s, every5("p", cks.MisfireRunOnce))
			paused, err := s.Schedules.Pause(ctx, "p", "bob")
			if err != nil || !paused.Paused || paused.PausedBy != "bob" || len(paused.NextRuns) != 0 {
				t.Fatalf("pause = %+v, %v", paused, err)
			}
			c.Set(t0.Add(30 * time.Minute))
			if f := mustFire(t, s, "p"); !f.Slot.IsZero() {
				t.Fatalf("a paused schedule fired: %+v", f)
			}
			resumed, err := s.Schedules.Resume(ctx, "p")
			if err != nil || resumed.Paused || resumed.PausedBy != "" || !resumed.NextRuns[0].Equal(t0.Add(35*time.Minute)) ||
				resumed.LastSlot == nil || !resumed.LastSlot.Equal(t0.Add(30*time.Minute)) {
				t.Fatalf("resume = %+v, %v; want running, the pause's slots behind it (last slot 12:30), next 12:35", resumed, err)
			}
			if f := mustFire(t, s, "p"); !f.Slot.IsZero() {
				t.Fatalf("resume owed a slot of the pause: %+v", f)
			}
			c.Set(t0.Add(35 * time.Minute))
			if f := mustFire(t, s, "p"); !f.Created {
				t.Fatalf("after resume, 12:35 = %+v", f)
			}
			if _, err := s.Schedules.Pause(ctx, "nothing", "bob"); !errors.Is(err, cks.ErrNotFound) {
				t.Fatalf("pause of no schedule: %v", err)
			}
		},
		// A trigger fires now, once, paused or not, without moving the
		// mark; a delete leaves the tasks and ends the schedule.
		"TriggerAndDelete": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0)
			s := open(t, driver.WithClock(c))
			ctx := backendtest.Ctx(t)
			n := every5("t", "")
			n.Paused = true
			mustCreate(t, s, n)
			c.Set(t0.Add(time.Minute))
			fired, err := s.Schedules.Trigger(ctx, "t", "carol")
			if err != nil || fired.Task.ID == 0 || fired.Task.CreatedBy != "carol" || fired.Task.DedupeKey != "" ||
				fired.Schedule.LastTaskID != fired.Task.ID || fired.Schedule.LastSlot != nil {
				t.Fatalf("trigger = %+v, %v; want a task by carol, the mark unmoved", fired, err)
			}
			if _, err := s.Schedules.Trigger(ctx, "t", "carol"); err != nil {
				t.Fatal(err)
			}
			if n := len(tasksOf(t, s, "report")); n != 2 {
				t.Fatalf("two triggers made %d tasks", n)
			}
			if err := s.Schedules.Delete(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Schedules.Get(ctx, "t"); !errors.Is(err, cks.ErrNotFound) {
				t.Fatalf("get after delete: %v", err)
			}
			if err := s.Schedules.Delete(ctx, "t"); !errors.Is(err, cks.ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := s.Schedules.Trigger(ctx, "t", "carol"); !errors.Is(err, cks.ErrNotFound) {
				t.Fatalf("trigger of no schedule: %v", err)
			}
			if n := len(tasksOf(t, s, "report")); n != 2 {
				t.Fatalf("delete took tasks: %d left", n)
			}
		},
		// The next runs are read in the schedule's zone (02:00 in Berlin
		// is 01:00 UTC in winter); @every slots are whole multiples.
		"NextRuns": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0.Add(7 * time.Second))
			s := open(t, driver.WithClock(c))
			tz := every5("berlin", "")
			tz.Cron, tz.TimeZone = "0 2 * * *", "Europe/Berlin"
			got := mustCreate(t, s, tz)
			want := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
			for i, r := range got.NextRuns {
				if !r.Equal(want.AddDate(0, 0, i)) {
					t.Fatalf("next runs %v; want daily from %v", got.NextRuns, want)
				}
			}
			ev := every5("every", "")
			ev.Cron = "@every 30s"
			if got := mustCreate(t, s, ev); !got.NextRuns[0].Equal(t0.Add(30*time.Second)) || !got.NextRuns[1].Equal(t0.Add(time.Minute)) {
				t.Fatalf("@every 30s next runs %v; want 12:00:30, 12:01:00", got.NextRuns)
			}
			hr := every5("hourly", "")
			hr.Cron = "@hourly"
			if got := mustCreate(t, s, hr); !got.NextRuns[0].Equal(t0.Add(time.Hour)) {
				t.Fatalf("@hourly next runs %v", got.NextRuns)
			}
			list, err := s.Schedules.List(backendtest.Ctx(t))
			if err != nil || len(list) != 3 || list[0].Name != "berlin" || list[2].Name != "hourly" {
				t.Fatalf("list = %+v, %v", list, err)
			}
		},
		// Bad input is refused naming its field, and stores nothing; a
		// name taken is a conflict.
		"Refusals": func(t *testing.T, open backendtest.Opener) {
			s := open(t)
			ctx := backendtest.Ctx(t)
			for _, c := range []struct {
				field string
				edit  func(*cks.NewSchedule)
			}{
				{"name", func(n *cks.NewSchedule) { n.Name = "" }},
				{"name", func(n *cks.NewSchedule) { n.Name = "a/b" }},
				{"name", func(n *cks.NewSchedule) { n.Name = string(make([]byte, 101)) }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "61 * * * *" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "* * * *" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "* * * * * *" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "@every 500ms" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "@every -5s" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "@fortnightly" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "0 0 30 2 *" }},
				{"cron", func(n *cks.NewSchedule) { n.Cron = "CRON_TZ=Asia/Tokyo 0 2 * * *" }},
				{"time_zone", func(n *cks.NewSchedule) { n.TimeZone = "Mars/Olympus" }},
				{"time_zone", func(n *cks.NewSchedule) { n.TimeZone = "Local" }},
				{"misfire", func(n *cks.NewSchedule) { n.Misfire = "catch_up" }},
				{"task.type", func(n *cks.NewSchedule) { n.Task.Type = "" }},
				{"task.priority", func(n *cks.NewSchedule) { n.Task.Priority = -1 }},
				{"task.max_attempts", func(n *cks.NewSchedule) { n.Task.MaxAttempts = 1000 }},
				{"task.payload", func(n *cks.NewSchedule) { n.Task.Payload = json.RawMessage(`{`) }},
			} {
				n := every5("ok", "")
				c.edit(&n)
				_, err := s.Schedules.Create(ctx, n)
				if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != c.field {
					t.Errorf("create with a bad %s (%+v): %v; want a FieldError naming it", c.field, n, err)
				}
			}
			if list, err := s.Schedules.List(ctx); err != nil || len(list) != 0 {
				t.Fatalf("refusals stored %+v, %v", list, err)
			}
			mustCreate(t, s, every5("ok", ""))
			if _, err := s.Schedules.Create(ctx, every5("ok", "")); !errors.Is(err, cks.ErrConflict) {
				t.Fatalf("a second schedule named ok: %v; want ErrConflict", err)
			}
		},
		// The runner fires a slot when its timer reaches it, with no poll
		// meanwhile, and only while its hub leads.
		"RunnerFiresOnTime": func(t *testing.T, open backendtest.Opener) {
			c := clock.NewFake(t0)
			s := open(t, driver.WithClock(c))
			mustCreate(t, s, every5("timer", ""))
			lead := &leading{}
			rounds := make(chan time.Time, 16)
			r := schedule.NewRunner(s.Schedules, schedule.RunnerConfig{Leader: lead, Clock: c, Idle: time.Hour,
				OnRound: func(next time.Time, err error) {
					if err != nil {
						t.Error(err)
					}
					rounds <- next
				}})
			ctx := backendtest.Ctx(t)
			if err := r.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Stop(context.Background()) })
			// A follower runs no round; made the leader, it sets its timer
			// to the next slot.
			if err := c.WaitArmed(ctx, 1); err != nil {
				t.Fatal(err)
			}
			select {
			case next := <-rounds:
				t.Fatalf("a follower ran a round (next %v)", next)
			default:
			}
			lead.set(true)
			r.Wake()
			if next := <-rounds; !next.Equal(t0.Add(5 * time.Minute)) {
				t.Fatalf("round's next slot = %v, want 12:05", next)
			}
			if err := c.WaitArmed(ctx, 1); err != nil {
				t.Fatal(err)
			}
			c.Set(t0.Add(5*time.Minute - time.Millisecond))
			select {
			case next := <-rounds:
				t.Fatalf("a round before the slot (next %v)", next)
			default:
			}
			c.Set(t0.Add(5 * time.Minute))
			if next := <-rounds; !next.Equal(t0.Add(10 * time.Minute)) {
				t.Fatalf("round at the slot: next %v, want 12:10", next)
			}
			waitfor.Until(t, "the slot's task", func() bool { return len(tasksOf(t, s, "report")) == 1 })
		},
	})
}

// jsonEq reports whether got holds the JSON value want (Postgres stores
// JSONB, which spaces it its own way).
func jsonEq(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

// leading is a Leader a test sets.
type leading struct {
	mu   sync.Mutex
	held bool
}

func (l *leading) IsLeader() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.held }

func (l *leading) set(v bool) { l.mu.Lock(); l.held = v; l.mu.Unlock() }

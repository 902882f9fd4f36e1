package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
)

// sfEvery is the slot interval of the failover test's schedule: longer than
// a failover (the leader TTL, its third, and slack for a loaded machine), so
// one slot at most falls in the leaderless window.
const sfEvery = 4 * time.Second

// TestScheduleFailover (issue 42 item 4): three `cks serve` hubs on one
// Postgres database (CKS_LEADER_TTL 1 s) and an "@every 4s" schedule at
// misfire run_once. The leader hub fires its slots; it is killed (SIGKILL)
// just before a slot, so that slot falls due while no hub leads; the new
// leader fires it, late, once. That leader is killed in turn at the very
// time of a slot, racing its fire; the last hub leaves that slot fired
// once too. Every slot from the first to the last seen
// has exactly one task (its dedupe key schedule:tick@SLOT): none twice,
// none lost. It logs each slot's lateness (task created − slot).
func TestScheduleFailover(t *testing.T) {
	db := backendtest.PostgresURL(t)
	hubs := startHubs(t, db, []string{"CKS_LEADER_TTL=1s"}, 3)
	ctx := context.Background()
	li, _ := agreedLeader(t, hubs)
	leaderHub, b := hubs[li], hubs[(li+1)%3]
	if _, err := b.api.CreateSchedule(ctx, cks.NewSchedule{Name: "tick", Cron: fmt.Sprintf("@every %s", sfEvery),
		Misfire: cks.MisfireRunOnce, Task: cks.ScheduleTask{Type: "tick", Title: "tick"}}); err != nil {
		t.Fatal(err)
	}
	slots := func(h *mhHub) map[time.Time][]cks.Task {
		t.Helper()
		page, err := h.api.ListTasks(ctx, cks.TaskFilter{Types: []string{"tick"}, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatalf("%s: list tick tasks: %v", h.name, err)
		}
		out := map[time.Time][]cks.Task{}
		for _, task := range page.Tasks {
			at, err := time.Parse(time.RFC3339, strings.TrimPrefix(task.DedupeKey, "schedule:tick@"))
			if err != nil {
				t.Fatalf("task %d: dedupe key %q names no slot", task.ID, task.DedupeKey)
			}
			out[at] = append(out[at], task)
		}
		return out
	}
	eventually(t, 3*sfEvery, "two slots fired by the leader", func() (bool, string) {
		n := len(slots(b))
		return n >= 2, fmt.Sprintf("%d slots", n)
	})
	// The kill lands a little before the next slot, which then falls due
	// with no leader (the wait picks the moment of the fault; it waits for
	// no state).
	due := time.Now().Round(0).UTC().Truncate(sfEvery).Add(sfEvery) // a map key: no monotonic reading, UTC
	if time.Until(due) < sfEvery/2 {
		due = due.Add(sfEvery)
	}
	time.Sleep(time.Until(due.Add(-200 * time.Millisecond)))
	killed := time.Now()
	leaderHub.kill()
	waitSlots := func(h *mhHub, due time.Time, killed time.Time) {
		t.Helper()
		eventually(t, 4*sfEvery, "the slot due at the kill fired, and the one after it", func() (bool, string) {
			got := slots(h)
			var seen []string
			for at, ts := range got {
				seen = append(seen, fmt.Sprintf("%s×%d@%s", at.Format("15:04:05"), len(ts), ts[0].CreatedAt.Format("15:04:05.000")))
			}
			slices.Sort(seen)
			return len(got[due]) > 0 && len(got[due.Add(sfEvery)]) > 0, fmt.Sprintf("due %s, killed %s; slots %v",
				due.Format("15:04:05"), killed.Format("15:04:05.000"), seen)
		})
	}
	waitSlots(b, due, killed)
	if fired := slots(b)[due][0].CreatedAt; !fired.After(killed) {
		t.Fatalf("the slot due after the kill (%s) fired at %s, before the kill at %s", due, fired, killed)
	}
	// The new leader killed at a slot's very time: it fired the slot or
	// not when it died; either way the last hub leaves it fired once.
	survivors := []*mhHub{hubs[(li+1)%3], hubs[(li+2)%3]}
	ni, _ := agreedLeader(t, survivors)
	second, last := survivors[ni], survivors[1-ni]
	due2 := time.Now().Round(0).UTC().Truncate(sfEvery).Add(sfEvery)
	if time.Until(due2) < sfEvery/2 {
		due2 = due2.Add(sfEvery)
	}
	time.Sleep(time.Until(due2))
	killed2 := time.Now()
	second.kill()
	waitSlots(last, due2, killed2)
	got := slots(last)
	keys := slices.SortedFunc(func(yield func(time.Time) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	}, time.Time.Compare)
	var late []string
	for s := keys[0]; !s.After(keys[len(keys)-1]); s = s.Add(sfEvery) {
		tasks := got[s]
		if len(tasks) != 1 {
			t.Fatalf("slot %s has %d tasks, want exactly 1 (slots %v)", s.Format(time.RFC3339), len(tasks), keys)
		}
		late = append(late, fmt.Sprintf("%s +%s", s.Format("15:04:05"), tasks[0].CreatedAt.Sub(s).Round(time.Millisecond)))
	}
	t.Logf("leader %s killed %s before slot %s: fired once, %s late, by the new leader %s; %s killed at slot %s: fired "+
		"once, %s late; every slot's lateness: %s", leaderHub.name, due.Sub(killed).Round(time.Millisecond),
		due.Format("15:04:05"), got[due][0].CreatedAt.Sub(due).Round(time.Millisecond), second.name, second.name,
		due2.Format("15:04:05"), got[due2][0].CreatedAt.Sub(due2).Round(time.Millisecond), strings.Join(late, ", "))
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// TestScheduleCLI: `cks schedule` creates, lists (table and --json, each
// with its next five runs), shows, pauses, resumes, triggers and deletes
// schedules on a hub; a bad expression, zone or policy is refused naming
// its flag and stores nothing; and the hub's leader fires an @every 1s
// schedule's slots on its own.
func TestScheduleCLI(t *testing.T) {
	h := startHub(t, "serve")
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", string(h.dir))...)
	}
	decode := func(r result, v any) {
		t.Helper()
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), v) != nil {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	var s cks.Schedule
	decode(run("schedule", "create", "nightly", "0 2 * * *", "--time-zone", "Europe/Berlin", "--misfire", "run_once",
		"--task", `{"type":"report","title":"nightly report","priority":5}`, "--json"), &s)
	if s.Name != "nightly" || s.TimeZone != "Europe/Berlin" || s.Misfire != cks.MisfireRunOnce || s.Task.Priority != 5 ||
		len(s.NextRuns) != 5 || s.NextRuns[0].Minute() != 0 || (s.NextRuns[0].UTC().Hour() != 0 && s.NextRuns[0].UTC().Hour() != 1) {
		t.Fatalf("created %+v", s)
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"bad", "61 * * * *", "--task", `{"type":"t"}`}, "invalid cron"},
		{[]string{"bad", "@hourly", "--time-zone", "Mars/Olympus", "--task", `{"type":"t"}`}, "--time-zone"},
		{[]string{"bad", "@hourly", "--misfire", "later", "--task", `{"type":"t"}`}, "--misfire"},
		{[]string{"bad", "@hourly", "--task", `{"type":""}`}, "task.type"},
	} {
		r := run(append([]string{"schedule", "create"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.flag) {
			t.Errorf("create %v: exit %d, stderr %q; want a refusal naming %s", c.args, r.code, r.stderr, c.flag)
		}
	}
	r := run("schedule", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, "NEXT RUN") || strings.Contains(r.stdout, "bad") {
		t.Fatalf("schedule list:\n%s%s", r.stdout, r.stderr)
	}
	var l cks.ScheduleList
	decode(run("schedule", "list", "--json"), &l)
	if len(l.Schedules) != 1 || len(l.Schedules[0].NextRuns) != 5 {
		t.Fatalf("schedule list --json: %+v", l)
	}
	if r = run("schedule", "pause", "nightly"); r.code != 0 || !strings.Contains(r.stdout, "schedule nightly paused") {
		t.Fatalf("pause:\n%s%s", r.stdout, r.stderr)
	}
	decode(run("schedule", "show", "nightly", "--json"), &s)
	if !s.Paused || s.PausedBy == "" || len(s.NextRuns) != 0 {
		t.Fatalf("paused: %+v", s)
	}
	if r = run("schedule", "resume", "nightly"); r.code != 0 || !strings.Contains(r.stdout, "Next runs:") {
		t.Fatalf("resume:\n%s%s", r.stdout, r.stderr)
	}
	var fired cks.ScheduleFired
	decode(run("schedule", "trigger", "nightly", "--json"), &fired)
	if fired.Task.ID == 0 || fired.Task.Type != "report" || fired.Schedule.LastTaskID != fired.Task.ID {
		t.Fatalf("trigger: %+v", fired)
	}

	// The hub fires an @every 1s schedule by itself.
	if r = run("schedule", "create", "tick", "@every 1s", "--task", `{"type":"tick"}`); r.code != 0 {
		t.Fatalf("create tick:\n%s%s", r.stdout, r.stderr)
	}
	var page cks.TaskPage
	waitFor(t, "a task of the tick schedule's slot", func() bool {
		r := run("task", "list", "--type", "tick", "--json")
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &page) == nil && len(page.Tasks) > 0
	})
	if k := page.Tasks[0].DedupeKey; !strings.HasPrefix(k, "schedule:tick@") || page.Tasks[0].CreatedBy != "schedule:tick" {
		t.Fatalf("the slot's task: %+v", page.Tasks[0])
	}
	for _, name := range []string{"tick", "nightly"} {
		if r = run("schedule", "delete", name); r.code != 0 || !strings.Contains(r.stdout, "deleted schedule "+name) {
			t.Fatalf("delete %s:\n%s%s", name, r.stdout, r.stderr)
		}
	}
	if r = run("schedule", "show", "nightly"); r.code == 0 || !strings.Contains(r.stderr, "no schedule") {
		t.Fatalf("show after delete: exit %d %s", r.code, r.stderr)
	}
}

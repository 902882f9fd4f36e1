package ledger

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// TestHistoryOfUpgradedRows: history reads the event rows written before
// issue 27 (a creation of an OPEN task, a claim and a start of their own)
// as they are, and an attempt begun before the upgrade and ended or still
// running after it without a claim or start twice or missing.
func TestHistoryOfUpgradedRows(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(s int, actor, from, to string, attempt int, reason string) driver.TaskEventRow {
		return driver.TaskEventRow{TaskID: 1, At: at(s), Actor: actor, FromState: from, ToState: to, Attempt: attempt, Reason: reason}
	}
	created := ev(0, "cli", "", "OPEN", 0, "enqueued")
	claimed := ev(1, "w1", "OPEN", "CLAIMED", 1, "claimed")
	started := ev(2, "w1", "CLAIMED", "RUNNING", 1, "running")
	ended := ev(3, "w1", "RUNNING", "COMPLETED", 1, "completed")
	ended.ClaimedAt, ended.StartedAt = at(1), at(2) // as written after the upgrade
	row := func(state string) driver.TaskRow {
		return driver.TaskRow{ID: 1, State: state, CreatedBy: "cli", CreatedAt: at(0), ClaimedBy: "w1",
			ClaimedAt: at(1), Attempts: 1, StateChangedAt: at(2)}
	}
	old := []string{"+0s cli →OPEN 0 enqueued", "+1s w1 OPEN→CLAIMED 1 claimed", "+2s w1 CLAIMED→RUNNING 1 running"}
	for _, c := range []struct {
		name   string
		row    driver.TaskRow
		events []driver.TaskEventRow
		want   []string
	}{
		{"every move a row", row("COMPLETED"), []driver.TaskEventRow{created, claimed, started,
			ev(3, "w1", "RUNNING", "COMPLETED", 1, "completed")}, append(old, "+3s w1 RUNNING→COMPLETED 1 completed")},
		{"claimed and started before, ended after", row("COMPLETED"), []driver.TaskEventRow{created, claimed, started, ended},
			append(old, "+3s w1 RUNNING→COMPLETED 1 completed")},
		{"claimed before, started and ended after", row("COMPLETED"), []driver.TaskEventRow{created, claimed, ended},
			append(old, "+3s w1 RUNNING→COMPLETED 1 completed")},
		{"claimed before, running now", row("RUNNING"), []driver.TaskEventRow{created, claimed}, old},
		{"claimed and started before, running now", row("RUNNING"), []driver.TaskEventRow{created, claimed, started}, old},
		{"all after", row("COMPLETED"), []driver.TaskEventRow{ended}, append(old, "+3s w1 RUNNING→COMPLETED 1 completed")},
		{"running now, nothing written", row("RUNNING"), nil, old},
	} {
		got, err := history(c.row, c.events)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range got {
			lines = append(lines, fmt.Sprintf("+%s %s %s→%s %d %s", e.At.Sub(t0), e.Actor, e.From, e.To, e.Attempt, e.Reason))
			if e.TaskID != 1 {
				t.Errorf("%s: event of task %d", c.name, e.TaskID)
			}
		}
		if !slices.Equal(lines, c.want) {
			t.Errorf("%s: history\n%q\nwant\n%q", c.name, lines, c.want)
		}
	}
}

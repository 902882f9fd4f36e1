package sweeper_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// retentionFixture is a store with a history around now = T0 + 30 days
// and a retention sweeper of age 7 days over it.
func retentionFixture(t *testing.T, open backendtest.Opener, age time.Duration) (*backend.Backend, *sweeper.Retention) {
	t.Helper()
	s := open(t)
	day := 24 * time.Hour
	now := backendtest.T0.Add(30 * day)
	up := func(id string, started, heartbeat time.Duration, exited bool) {
		r := backendtest.Liveness(id, "critic", started)
		r.LastHeartbeatAt = backendtest.T0.Add(heartbeat)
		if exited {
			r.ExitedAt = r.LastHeartbeatAt
		}
		backendtest.MustUpsert(t, s, r)
	}
	up("exited-old", 0, day, true)                         // exited 29 days ago: pruned
	up("dead-old", 2*day, 3*day, false)                    // stopped heartbeating 27 days ago: pruned
	up("exited-at-age", 20*day, 23*day, true)              // exactly 7 days ago: kept (older than, not as old as)
	up("exited-recent", 25*day, 29*day, true)              // exited a day ago: kept
	up("alive-since-long", day, 30*day-time.Second, false) // started a month ago, alive: kept
	// Audit data: a terminal task older than any age.
	if _, _, err := s.Tasks.Enqueue(backendtest.Ctx(t), cks.NewTask{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	c := clock.NewFake(now)
	return s, &sweeper.Retention{Liveness: liveness.NewService(s.Driver(), c), Clock: c, Age: age}
}

func remaining(t *testing.T, s *backend.Backend) string {
	t.Helper()
	rows, err := s.Liveness.ListAgentLiveness(backendtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.InstanceID)
	}
	return strings.Join(ids, " ")
}

// TestRetentionPrunesOnlyOldOperationalHistory: a pass deletes the liveness
// rows of instances stopped longer than the age, and nothing else — not
// an alive instance however old its start, not a younger row, not a task
// (CKS_RETENTION_TASKS unset); age 0 deletes nothing. Both backends.
func TestRetentionPrunesOnlyOldOperationalHistory(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, r := retentionFixture(t, open, 7*24*time.Hour)
		n, err := r.SweepOnce(backendtest.Ctx(t))
		if err != nil || n != 2 {
			t.Fatalf("pass = %d, %v; want the 2 old rows", n, err)
		}
		if got := remaining(t, s); got != "exited-recent exited-at-age alive-since-long" {
			t.Fatalf("left %q", got)
		}
		rep, ok := r.Details().(sweeper.RetentionReport)
		if !ok || rep.LivenessRows != 2 || rep.TasksArchived != 0 || rep.Age != "168h0m0s" || rep.TasksAge != "off" {
			t.Fatalf("details %+v", r.Details())
		}
		if n, err := s.Tasks.CountTasks(backendtest.Ctx(t), cks.TaskFilter{}); err != nil || n != 1 {
			t.Fatalf("tasks after the pass: %d, %v; want the one task kept", n, err)
		}
		if n, err := r.SweepOnce(backendtest.Ctx(t)); err != nil || n != 0 {
			t.Fatalf("second pass = %d, %v; want nothing left to prune", n, err)
		}

		s, off := retentionFixture(t, open, 0)
		if n, err := off.SweepOnce(backendtest.Ctx(t)); err != nil || n != 0 || strings.Count(remaining(t, s), " ") != 4 {
			t.Fatalf("age 0: pass = %d, %v, left %q; want everything kept", n, err, remaining(t, s))
		}
	})
}

// TestRetentionBatches: a pass over a backlog larger than a batch deletes
// it all, batch by batch.
func TestRetentionBatches(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		n := liveness.PruneBatch + 7
		rows := make([]cks.AgentLiveness, n)
		for i := range rows {
			rows[i] = backendtest.Liveness(fmt.Sprintf("old-%05d", i), "exec", 0)
			rows[i].ExitedAt = rows[i].StartedAt
			backendtest.MustUpsert(t, s, rows[i])
		}
		c := clock.NewFake(backendtest.T0.Add(30 * 24 * time.Hour))
		r := &sweeper.Retention{Liveness: liveness.NewService(s.Driver(), c), Clock: c, Age: time.Hour}
		if got, err := r.SweepOnce(backendtest.Ctx(t)); err != nil || got != n {
			t.Fatalf("pass = %d, %v; want %d", got, err, n)
		}
		if left := remaining(t, s); left != "" {
			t.Fatalf("left %q", left)
		}
	})
}

// TestRetentionStandsBy: on a hub that is not the maintenance leader the
// runner skips the retention pass, so nothing is pruned there.
func TestRetentionStandsBy(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, r := retentionFixture(t, open, 7*24*time.Hour)
		var lead atomic.Bool
		run, err := s.Sweepers.Registry().Register(r, sweeper.Options{Interval: time.Hour, ConfigEnabled: true, Leader: leaderFunc(lead.Load),
			Clock: clock.NewFake(backendtest.T0)})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Start(backendtest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := run.Stop(backendtest.Ctx(t)); err != nil {
				t.Error(err)
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !run.Status().Standby {
			if time.Now().After(deadline) {
				t.Fatal("the runner never read standby")
			}
			time.Sleep(time.Millisecond)
		}
		if got := remaining(t, s); strings.Count(got, " ") != 4 {
			t.Fatalf("a standby hub pruned: left %q", got)
		}
		lead.Store(true)
		run.RunNow()
		for run.Status().RunCount == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the leader's pass never ran")
			}
			time.Sleep(time.Millisecond)
		}
		if got := remaining(t, s); got != "exited-recent exited-at-age alive-since-long" {
			t.Fatalf("the leader's pass left %q", got)
		}
	})
}

type leaderFunc func() bool

func (f leaderFunc) IsLeader() bool { return f() }

// TestRetentionKnowledge: the knowledge log is audit data — a pass with
// KnowledgeAge unset keeps every entry even with an archiver wired (the
// hub's default); with it set, the old entries of a final object are
// archived and deleted, the object kept, and the report counts them.
func TestRetentionKnowledge(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		c := backendtest.Ctx(t)
		o := backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "question", Status: cks.StatusResolved})
		archive := knowledge.FileArchive(filepath.Join(t.TempDir(), "knowledge.jsonl"), time.Now)
		clk := clock.NewFake(time.Now().Add(30 * 24 * time.Hour))
		r := &sweeper.Retention{Clock: clk, Knowledge: sweeper.KnowledgeArchiverFunc(func(ctx context.Context, before time.Time, maxRows int) (int, error) {
			return s.Objects.ArchiveFinalLogs(ctx, before, maxRows, archive)
		})}
		if n, err := r.SweepOnce(c); err != nil || n != 0 || len(backendtest.MustGetObject(t, s.Objects, o.ID).Log) != 1 {
			t.Fatalf("KnowledgeAge unset: pass = %d, %v; want the log kept", n, err)
		}
		if rep, ok := r.Details().(sweeper.RetentionReport); !ok || rep.KnowledgeAge != "off" {
			t.Fatalf("details %+v", r.Details())
		}
		r.KnowledgeAge = 7 * 24 * time.Hour
		if n, err := r.SweepOnce(c); err != nil || n != 1 {
			t.Fatalf("KnowledgeAge 7d: pass = %d, %v; want the 1 entry", n, err)
		}
		if got := backendtest.MustGetObject(t, s.Objects, o.ID); got.Status != cks.StatusResolved || len(got.Log) != 0 {
			t.Fatalf("object after the pass: status %q, %d entries", got.Status, len(got.Log))
		}
		if rep, ok := r.Details().(sweeper.RetentionReport); !ok || rep.KnowledgeArchived != 1 || rep.KnowledgeAge != "168h0m0s" {
			t.Fatalf("details %+v", r.Details())
		}
	})
}

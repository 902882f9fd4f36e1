package sweeper

import (
	"context"
	"sync"
	"time"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
)

// RetentionID is the id of the retention sweeper.
const RetentionID = "retention"

// Defaults of the retention sweeper.
const (
	// DefaultRetention is the age past which operational history (the
	// liveness rows of instances that stopped, the sweepers' passes) is
	// pruned: CKS_RETENTION's default.
	DefaultRetention = config.DefaultRetention
	// RetentionMaxRows bounds what one pass deletes of each kind of
	// history, so that a pass over a long backlog stays short; the next
	// pass goes on.
	RetentionMaxRows = 50_000
)

// Retention bounds the history the store keeps (issue 26). Every pass
// prunes the operational history older than Age — the liveness rows of
// instances that exited or stopped heartbeating (liveness.Service.Prune)
// and the sweepers' recorded passes (Controller.PrunePasses; ended task credentials and expired sessions the lease reaper already
// deletes as soon as they end) — and, only when TasksAge is set, the
// terminal tasks older than it, archived before they are deleted
// (Tasks), and only when KnowledgeAge is set, the old transition-log rows
// of knowledge objects in a final status, archived likewise (Knowledge).
// Task history and the knowledge store's logs are audit data: a zero
// TasksAge or KnowledgeAge keeps them. Deletes run in short batches (no
// long transaction).
type Retention struct {
	Liveness LivenessPruner
	// Passes prunes the sweepers' recorded passes; nil keeps them (each
	// sweeper's stay capped at PassesKept).
	Passes PassPruner
	// Tasks archives and deletes old terminal tasks; nil keeps them.
	Tasks TaskArchiver
	// Knowledge archives and deletes old log rows of final objects; nil
	// keeps them.
	Knowledge KnowledgeArchiver
	Clock     clock.Clock
	// Age is the age of the operational history pruned; 0 keeps it.
	Age time.Duration
	// TasksAge is the age of the terminal tasks archived and deleted; 0
	// (the default) keeps every task.
	TasksAge time.Duration
	// KnowledgeAge is the age of the transition-log rows archived and
	// deleted; 0 (the default) keeps the whole log.
	KnowledgeAge time.Duration

	mu   sync.Mutex
	last *RetentionReport
}

// LivenessPruner is what Retention needs of process liveness.
type LivenessPruner interface {
	Prune(ctx context.Context, before, now time.Time, maxRows int) (int, error)
}

// PassPruner is what Retention needs of the sweepers' pass history
// (Controller): delete up to maxRows passes started before before.
type PassPruner interface {
	PrunePasses(ctx context.Context, before time.Time, maxRows int) (int, error)
}

// TaskArchiver is what Retention needs of the ledger: archive, then
// delete, up to maxTasks terminal tasks whose state last changed before
// before, returning how many.
type TaskArchiver interface {
	ArchiveTerminal(ctx context.Context, before time.Time, maxTasks int) (int, error)
}

// TaskArchiverFunc is a func that is a TaskArchiver.
type TaskArchiverFunc func(ctx context.Context, before time.Time, maxTasks int) (int, error)

// ArchiveTerminal calls f.
func (f TaskArchiverFunc) ArchiveTerminal(ctx context.Context, before time.Time, maxTasks int) (int, error) {
	return f(ctx, before, maxTasks)
}

// KnowledgeArchiver is what Retention needs of the knowledge store:
// archive, then delete, up to maxRows transition-log rows older than
// before of objects in a final status, returning how many.
type KnowledgeArchiver interface {
	ArchiveFinalLogs(ctx context.Context, before time.Time, maxRows int) (int, error)
}

// KnowledgeArchiverFunc is a func that is a KnowledgeArchiver.
type KnowledgeArchiverFunc func(ctx context.Context, before time.Time, maxRows int) (int, error)

// ArchiveFinalLogs calls f.
func (f KnowledgeArchiverFunc) ArchiveFinalLogs(ctx context.Context, before time.Time, maxRows int) (int, error) {
	return f(ctx, before, maxRows)
}

// RetentionReport is what the last pass of the retention sweeper did (its
// Details).
type RetentionReport struct {
	// LivenessRows is how many liveness rows it deleted.
	LivenessRows int `json:"liveness_rows"`
	// SweeperPasses is how many recorded sweeper passes it deleted.
	SweeperPasses int `json:"sweeper_passes"`
	// TasksArchived is how many terminal tasks it archived and deleted.
	TasksArchived int `json:"tasks_archived"`
	// KnowledgeArchived is how many transition-log rows it archived and
	// deleted.
	KnowledgeArchived int `json:"knowledge_archived"`
	// Age, TasksAge and KnowledgeAge are the configured ages, "off" when
	// kept.
	Age          string `json:"age"`
	TasksAge     string `json:"tasks_age"`
	KnowledgeAge string `json:"knowledge_age"`
}

// ID returns "retention".
func (*Retention) ID() string { return RetentionID }

// SweepOnce prunes what is older than the ages and returns how many rows,
// passes, tasks and log rows it deleted.
func (r *Retention) SweepOnce(ctx context.Context) (int, error) {
	now := r.Clock.Now()
	rep := RetentionReport{Age: ageText(r.Age), TasksAge: ageText(r.TasksAge), KnowledgeAge: ageText(r.KnowledgeAge)}
	var err error
	if r.Age > 0 && r.Liveness != nil {
		rep.LivenessRows, err = r.Liveness.Prune(ctx, now.Add(-r.Age), now, RetentionMaxRows)
	}
	if err == nil && r.Age > 0 && r.Passes != nil {
		rep.SweeperPasses, err = r.Passes.PrunePasses(ctx, now.Add(-r.Age), RetentionMaxRows)
	}
	if err == nil && r.TasksAge > 0 && r.Tasks != nil {
		rep.TasksArchived, err = r.Tasks.ArchiveTerminal(ctx, now.Add(-r.TasksAge), RetentionMaxRows)
	}
	if err == nil && r.KnowledgeAge > 0 && r.Knowledge != nil {
		rep.KnowledgeArchived, err = r.Knowledge.ArchiveFinalLogs(ctx, now.Add(-r.KnowledgeAge), RetentionMaxRows)
	}
	if err == nil {
		r.mu.Lock()
		r.last = &rep
		r.mu.Unlock()
	}
	return rep.LivenessRows + rep.SweeperPasses + rep.TasksArchived + rep.KnowledgeArchived, err
}

// Details returns the report of the last successful pass, or nil.
func (r *Retention) Details() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
	return *r.last
}

func ageText(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return d.String()
}

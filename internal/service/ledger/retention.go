package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/jsonlines"
	"github.com/cks-dev/cks/internal/driver"
)

// PurgeBatch is how many tasks one transaction of ArchiveTerminal deletes.
const PurgeBatch = 100

// ArchiveTerminal removes old task history (the retention sweeper, only
// when the operator set CKS_RETENTION_TASKS; tasks are audit data): up to
// maxTasks terminal tasks whose state last changed before before and that
// no task still names — as a parent, or as a dependency of a task not
// terminal — a batch at a time. Each batch is read in full (GetTask: the
// events, evidence, decisions and aborts) and handed to archive first;
// only once archive returned nil is it deleted, with every row of its
// tasks, in one short transaction (driver TaskPurge, which checks the rule
// again there). A task that stopped qualifying in between is archived and
// kept, so the archive holds every deleted task, and perhaps a few that
// were not. It returns how many tasks it deleted.
func (s *Service) ArchiveTerminal(ctx context.Context, before time.Time, maxTasks int, archive func([]cks.Task) error) (int, error) {
	states := make([]string, len(Terminal))
	for i, st := range Terminal {
		states[i] = string(st)
	}
	total := 0
	for total < maxTasks {
		limit := min(PurgeBatch, maxTasks-total)
		ids, err := s.db.Executor().TaskPurgeCandidates(ctx, driver.TaskPurgeCandidatesParams{States: states, Before: before, Limit: limit})
		if err != nil {
			return total, fmt.Errorf("archive tasks: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		tasks := make([]cks.Task, 0, len(ids))
		for _, id := range ids {
			t, err := s.GetTask(ctx, id)
			if err != nil {
				return total, fmt.Errorf("archive task %d: %w", id, err)
			}
			tasks = append(tasks, t)
		}
		if err := archive(tasks); err != nil {
			return total, fmt.Errorf("archive tasks: %w", err)
		}
		var deleted []int64
		err = s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			var err error
			deleted, err = ex.TaskPurge(ctx, driver.TaskPurgeParams{IDs: ids, States: states, Before: before})
			return err
		})
		if err != nil {
			return total, fmt.Errorf("delete archived tasks: %w", err)
		}
		if total += len(deleted); len(ids) < limit {
			break
		}
	}
	return total, nil
}

// ArchivedTask is one line of a task archive (JSON lines): the task as
// get_task reads it, events, evidence and aborts included, and when it
// was archived.
type ArchivedTask struct {
	ArchivedAt time.Time `json:"archived_at"`
	Task       cks.Task  `json:"task"`
}

// FileArchive returns an archive for ArchiveTerminal that appends each
// task as a line of JSON (ArchivedTask) to the file at path, created 0600
// with its directory (0700) when missing, and syncs the file before it
// returns, so that nothing is deleted before its line is on disk.
func FileArchive(path string, now func() time.Time) func([]cks.Task) error {
	return func(tasks []cks.Task) error {
		at := now().UTC()
		lines := make([]ArchivedTask, len(tasks))
		for i, x := range tasks {
			lines[i] = ArchivedTask{ArchivedAt: at, Task: x}
		}
		return jsonlines.Append(path, lines)
	}
}

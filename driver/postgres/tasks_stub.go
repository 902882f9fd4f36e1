package postgres

// STUBS, not the driver: the TaskExecutor primitives are written by issue 13's
// helper T, the task ledger. Every method returns errors.ErrUnsupported so the
// package compiles and the conformance suite skips them. Delete this file when
// the real primitives land.

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks/driver"
)

func (*executor) TaskInsertMany(ctx context.Context, rows []driver.TaskRow) ([]int64, error) {
	return nil, notYet("TaskInsertMany")
}

func (*executor) TaskGetMany(ctx context.Context, p driver.TaskGetManyParams) ([]driver.TaskRow, error) {
	return nil, notYet("TaskGetMany")
}

func (*executor) TaskUpdateMany(ctx context.Context, rows []driver.TaskRow) (int, error) {
	return 0, notYet("TaskUpdateMany")
}

func (*executor) TaskClaimable(ctx context.Context, p driver.TaskClaimableParams) ([]driver.TaskRow, error) {
	return nil, notYet("TaskClaimable")
}

func (*executor) TaskLeaseExpired(ctx context.Context, p driver.TaskLeaseExpiredParams) ([]driver.TaskRow, error) {
	return nil, notYet("TaskLeaseExpired")
}

func (*executor) TaskList(ctx context.Context, p driver.TaskListParams) ([]driver.TaskRow, error) {
	return nil, notYet("TaskList")
}

func (*executor) TaskCount(ctx context.Context, p driver.TaskCountParams) (int, error) {
	return 0, notYet("TaskCount")
}

func (*executor) TaskDedupeFind(ctx context.Context, p driver.TaskDedupeFindParams) (int64, error) {
	return 0, notYet("TaskDedupeFind")
}

func (*executor) TaskDepInsertMany(ctx context.Context, deps []driver.TaskDep) error {
	return notYet("TaskDepInsertMany")
}

func (*executor) TaskDepDeleteMany(ctx context.Context, deps []driver.TaskDep) error {
	return notYet("TaskDepDeleteMany")
}

func (*executor) TaskDepList(ctx context.Context, ids []int64) ([]driver.TaskDep, error) {
	return nil, notYet("TaskDepList")
}

func (*executor) TaskDependants(ctx context.Context, p driver.TaskDependantsParams) ([]driver.TaskRow, error) {
	return nil, notYet("TaskDependants")
}

func (*executor) TaskLockDependencyGraph(ctx context.Context) error {
	return notYet("TaskLockDependencyGraph")
}

func (*executor) TaskEventInsertMany(ctx context.Context, events []driver.TaskEventRow) error {
	return notYet("TaskEventInsertMany")
}

func (*executor) TaskEventList(ctx context.Context, taskID int64) ([]driver.TaskEventRow, error) {
	return nil, notYet("TaskEventList")
}

func (*executor) EvidenceInsert(ctx context.Context, e driver.EvidenceRow) (driver.EvidenceRow, error) {
	return driver.EvidenceRow{}, notYet("EvidenceInsert")
}

func (*executor) EvidenceList(ctx context.Context, taskID int64) ([]driver.EvidenceRow, error) {
	return nil, notYet("EvidenceList")
}

func (*executor) DecisionInsert(ctx context.Context, d driver.DecisionRow) (driver.DecisionRow, error) {
	return driver.DecisionRow{}, notYet("DecisionInsert")
}

func (*executor) DecisionList(ctx context.Context, taskID int64) ([]driver.DecisionRow, error) {
	return nil, notYet("DecisionList")
}

func (*executor) AbortInsert(ctx context.Context, a driver.AbortRow) (driver.AbortRow, error) {
	return driver.AbortRow{}, notYet("AbortInsert")
}

func (*executor) AbortGet(ctx context.Context, abortID int64) (driver.AbortRow, error) {
	return driver.AbortRow{}, notYet("AbortGet")
}

func (*executor) AbortFindLatest(ctx context.Context, p driver.AbortFindLatestParams) (driver.AbortRow, error) {
	return driver.AbortRow{}, notYet("AbortFindLatest")
}

func (*executor) AbortUpdate(ctx context.Context, a driver.AbortRow) error {
	return notYet("AbortUpdate")
}

func (*executor) AbortList(ctx context.Context, taskID int64) ([]driver.AbortRow, error) {
	return nil, notYet("AbortList")
}

func (*executor) AbortLatestMany(ctx context.Context, taskIDs []int64) ([]driver.AbortRow, error) {
	return nil, notYet("AbortLatestMany")
}

func (*executor) AbortPendingDue(ctx context.Context, p driver.AbortPendingDueParams) ([]driver.AbortRow, error) {
	return nil, notYet("AbortPendingDue")
}

// notYet is the error of a stub primitive.
func notYet(name string) error {
	return fmt.Errorf("postgres: %s: not implemented yet: %w", name, errors.ErrUnsupported)
}

package postgres

// STUBS, not the driver: the KnowledgeExecutor primitives are written by issue 13's
// helper K, the knowledge store. Every method returns errors.ErrUnsupported so the
// package compiles and the conformance suite skips them. Delete this file when
// the real primitives land.

import (
	"context"
	"time"

	"github.com/cks-dev/cks/driver"
)

func (*executor) ObjectInsert(ctx context.Context, o driver.ObjectRow) (driver.ObjectRow, driver.VersionRow, error) {
	return driver.ObjectRow{}, driver.VersionRow{}, notYet("ObjectInsert")
}

func (*executor) ObjectGetMany(ctx context.Context, p driver.ObjectGetManyParams) ([]driver.ObjectRow, error) {
	return nil, notYet("ObjectGetMany")
}

func (*executor) ObjectUpdate(ctx context.Context, o driver.ObjectRow) error {
	return notYet("ObjectUpdate")
}

func (*executor) ObjectList(ctx context.Context, p driver.ObjectListParams) ([]driver.ObjectRow, error) {
	return nil, notYet("ObjectList")
}

func (*executor) ObjectClaimable(ctx context.Context, p driver.ObjectClaimableParams) ([]driver.ObjectRow, error) {
	return nil, notYet("ObjectClaimable")
}

func (*executor) ObjectClaimedBefore(ctx context.Context, before time.Time) ([]driver.ObjectRow, error) {
	return nil, notYet("ObjectClaimedBefore")
}

func (*executor) ObjectForked(ctx context.Context, after int64, limit int) ([]driver.ObjectRow, error) {
	return nil, notYet("ObjectForked")
}

func (*executor) VersionInsert(ctx context.Context, v driver.VersionRow) (driver.VersionRow, error) {
	return driver.VersionRow{}, notYet("VersionInsert")
}

func (*executor) VersionList(ctx context.Context, p driver.VersionListParams) ([]driver.VersionRow, error) {
	return nil, notYet("VersionList")
}

func (*executor) VersionUnsetHeads(ctx context.Context, objectID int64, ids []int64) (int, error) {
	return 0, notYet("VersionUnsetHeads")
}

func (*executor) EdgeInsertMany(ctx context.Context, edges []driver.EdgeRow) ([]driver.EdgeRow, error) {
	return nil, notYet("EdgeInsertMany")
}

func (*executor) EdgeListOf(ctx context.Context, objectID int64) ([]driver.EdgeRow, error) {
	return nil, notYet("EdgeListOf")
}

func (*executor) EdgeList(ctx context.Context, after int64, limit int) ([]driver.EdgeRow, error) {
	return nil, notYet("EdgeList")
}

func (*executor) TransitionInsertMany(ctx context.Context, entries []driver.TransitionRow) error {
	return notYet("TransitionInsertMany")
}

func (*executor) TransitionList(ctx context.Context, objectID int64) ([]driver.TransitionRow, error) {
	return nil, notYet("TransitionList")
}

package backendtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/cks-dev/cks/internal/driver"
)

// Reads are the knowledge reads a ReadCounter counted: Txs read
// transactions (a read-only WithTx, or one read through Executor outside
// any transaction, which the database runs as a transaction of its own)
// and Reads primitive calls in them. Reads inside a write transaction are
// part of the write and not counted here.
type Reads struct {
	Txs, Reads int
}

func (r Reads) String() string { return fmt.Sprintf("%d read transactions, %d reads", r.Txs, r.Reads) }

// ReadCounter is a driver.Driver that counts the knowledge store's reads
// through it (the read primitives of driver.KnowledgeExecutor), for tests
// that bound how much a read costs the database. It is safe for concurrent
// use; every other primitive passes through uncounted.
type ReadCounter struct {
	driver.Driver
	mu sync.Mutex
	n  Reads
}

// CountReads returns d with its knowledge reads counted.
func CountReads(d driver.Driver) *ReadCounter { return &ReadCounter{Driver: d} }

// Take returns the reads counted since the last Take and starts over.
func (c *ReadCounter) Take() Reads {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = Reads{}
	return n
}

// Executor implements driver.Driver.
func (c *ReadCounter) Executor() driver.Executor {
	return newCounted(c, c.Driver.Executor(), false, false)
}

// WithTx implements driver.Driver.
func (c *ReadCounter) WithTx(ctx context.Context, opts driver.TxOptions, fn func(ctx context.Context, ex driver.Executor) error) error {
	return c.Driver.WithTx(ctx, opts, func(ctx context.Context, ex driver.Executor) error {
		if opts.ReadOnly {
			c.mu.Lock()
			c.n.Txs++
			c.mu.Unlock()
		}
		return fn(ctx, newCounted(c, ex, true, !opts.ReadOnly))
	})
}

// counted is an Executor whose knowledge reads are counted. It declares
// every primitive of driver.KnowledgeExecutor itself (the embedded
// interfaces are the others), so a new one fails to compile here until it
// is counted or passed through.
type counted struct {
	driver.TaskExecutor
	driver.LivenessExecutor
	driver.ControlExecutor
	driver.LeaderExecutor
	driver.ScheduleExecutor
	driver.LimitExecutor
	driver.UsageExecutor
	driver.PrincipalExecutor
	driver.SessionExecutor
	ke          driver.Executor
	c           *ReadCounter
	inTx, write bool
}

func newCounted(c *ReadCounter, ex driver.Executor, inTx, write bool) counted {
	return counted{TaskExecutor: ex, LivenessExecutor: ex, ControlExecutor: ex, LeaderExecutor: ex, ScheduleExecutor: ex, LimitExecutor: ex, UsageExecutor: ex, PrincipalExecutor: ex,
		SessionExecutor: ex, ke: ex, c: c, inTx: inTx, write: write}
}

// Notify implements driver.Executor.
func (e counted) Notify(ctx context.Context, topic string) error { return e.ke.Notify(ctx, topic) }

// read counts one read primitive call.
func (e counted) read() {
	if e.write {
		return
	}
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.n.Reads++
	if !e.inTx {
		e.c.n.Txs++
	}
}

func (e counted) ObjectInsertMany(ctx context.Context, rows []driver.ObjectRow) ([]int64, error) {
	return e.ke.ObjectInsertMany(ctx, rows)
}

func (e counted) ObjectGetMany(ctx context.Context, p driver.ObjectGetManyParams) ([]driver.ObjectRow, error) {
	e.read()
	return e.ke.ObjectGetMany(ctx, p)
}

func (e counted) ObjectExistMany(ctx context.Context, ids []int64) ([]int64, error) {
	e.read()
	return e.ke.ObjectExistMany(ctx, ids)
}

func (e counted) ObjectUpdateMany(ctx context.Context, rows []driver.ObjectRow) (int, error) {
	return e.ke.ObjectUpdateMany(ctx, rows)
}

func (e counted) ObjectList(ctx context.Context, p driver.ObjectListParams) ([]driver.ObjectRow, error) {
	e.read()
	return e.ke.ObjectList(ctx, p)
}

func (e counted) ObjectClaimable(ctx context.Context, p driver.ObjectClaimableParams) ([]driver.ObjectRow, error) {
	e.read()
	return e.ke.ObjectClaimable(ctx, p)
}

func (e counted) ObjectClaimedBefore(ctx context.Context, p driver.ObjectClaimedBeforeParams) ([]driver.ObjectRow, error) {
	e.read()
	return e.ke.ObjectClaimedBefore(ctx, p)
}

func (e counted) ForkList(ctx context.Context, p driver.ForkListParams) ([]driver.ForkRow, error) {
	e.read()
	return e.ke.ForkList(ctx, p)
}

func (e counted) VersionInsertMany(ctx context.Context, rows []driver.VersionRow) ([]int64, error) {
	return e.ke.VersionInsertMany(ctx, rows)
}

func (e counted) VersionList(ctx context.Context, p driver.VersionListParams) ([]driver.VersionRow, error) {
	e.read()
	return e.ke.VersionList(ctx, p)
}

func (e counted) VersionUnsetHeads(ctx context.Context, p driver.VersionUnsetHeadsParams) (int, error) {
	return e.ke.VersionUnsetHeads(ctx, p)
}

func (e counted) EdgeInsertMany(ctx context.Context, rows []driver.EdgeRow) ([]int64, error) {
	return e.ke.EdgeInsertMany(ctx, rows)
}

func (e counted) EdgeListOfMany(ctx context.Context, objectIDs []int64) ([]driver.EdgeRow, error) {
	e.read()
	return e.ke.EdgeListOfMany(ctx, objectIDs)
}

func (e counted) EdgeList(ctx context.Context, p driver.EdgeListParams) ([]driver.EdgeRow, error) {
	e.read()
	return e.ke.EdgeList(ctx, p)
}

func (e counted) TransitionInsertMany(ctx context.Context, rows []driver.TransitionRow) error {
	return e.ke.TransitionInsertMany(ctx, rows)
}

func (e counted) TransitionListMany(ctx context.Context, objectIDs []int64) ([]driver.TransitionRow, error) {
	e.read()
	return e.ke.TransitionListMany(ctx, objectIDs)
}

func (e counted) TransitionPurgeCandidates(ctx context.Context, p driver.TransitionPurgeCandidatesParams) ([]driver.TransitionRow, error) {
	e.read()
	return e.ke.TransitionPurgeCandidates(ctx, p)
}

func (e counted) TransitionPurge(ctx context.Context, p driver.TransitionPurgeParams) ([]int64, error) {
	return e.ke.TransitionPurge(ctx, p)
}

package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cks-dev/cks"
)

// ExecutorName is the name an agent process claims its tasks under (the
// tasks' claimed_by): its kind and its instance id.
func ExecutorName(kind, instanceID string) string { return kind + "/" + instanceID }

// ParseExecutorName is ExecutorName's inverse: the kind and instance id of
// an executor an agent process named, and false for any other executor (a
// worker of the Go API or an HTTP client names itself as it likes). The
// studio uses it to offer the stop of the process behind an abort.
func ParseExecutorName(name string) (kind, instanceID string, ok bool) {
	kind, instanceID, ok = strings.Cut(name, "/")
	if !ok || kind == "" || instanceID == "" || strings.Contains(instanceID, "/") {
		return "", "", false
	}
	return kind, instanceID, true
}

// ExitRecorder is what recording a gone agent process needs of the
// services: the ledger's release of an executor's leases and the liveness
// record of an exit.
type ExitRecorder struct {
	Tasks interface {
		ReleaseExecutor(ctx context.Context, executor, actor, why string) ([]cks.Task, error)
	}
	Liveness interface {
		RecordExited(ctx context.Context, instanceID string) (cks.AgentLiveness, bool, error)
	}
}

// RecordExit records agent process p as gone, for the one that knows it
// is (`cks dev` reaped it: it was killed after the grace period, or died):
// every lease it held is released at once (ledger ReleaseExecutor: its
// tasks OPEN again, or FAILED at max attempts, its tokens refused, so a
// zombie cannot complete them), and its liveness row reads exited
// (liveness RecordExited) — the truth a process killed before its last
// write could not tell. actor is who records it. It returns the tasks
// released.
func (r ExitRecorder) RecordExit(ctx context.Context, p cks.AgentLiveness, actor string) ([]cks.Task, error) {
	released, err := r.Tasks.ReleaseExecutor(ctx, ExecutorName(p.ProcessKind, p.InstanceID), actor, "executor exited")
	if _, _, lerr := r.Liveness.RecordExited(ctx, p.InstanceID); lerr != nil {
		err = errors.Join(err, lerr)
	}
	if err != nil {
		return released, fmt.Errorf("record %s %s exited: %w", p.ProcessKind, p.InstanceID, err)
	}
	return released, nil
}

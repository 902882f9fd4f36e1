package liveness

import (
	"context"
	"errors"
	"fmt"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// StopRequested reports whether the process instance that reporter reports
// (report_process) was asked to stop, or has exited: a claim for it takes
// nothing more (ADR-016 §4: a stopping process drains). An instance that
// has not reported yet was asked nothing (false); another principal's is
// ErrConflict, as its report would be — a caller learns nothing of
// processes not its own.
func (s *Service) StopRequested(ctx context.Context, reporter, instanceID string) (bool, error) {
	if err := cks.ValidateInstanceID("instance_id", instanceID); err != nil {
		return false, err
	}
	r, err := s.db.Executor().LivenessGet(ctx, instanceID)
	switch {
	case errors.Is(err, driver.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get liveness %s: %w", instanceID, err)
	case r.ReportedBy != reporter:
		return false, reportedByAnother(instanceID)
	}
	return r.DesiredState == cks.DesiredStopRequested || !r.ExitedAt.IsZero(), nil
}

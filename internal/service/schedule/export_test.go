package schedule

import "context"

// Fire is fire, for the tests of a slot's rule without a runner.
func (s *Service) Fire(ctx context.Context, name string) (Fired, error) { return s.fire(ctx, name) }

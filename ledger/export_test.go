package ledger

// Queued reports how many Complete, Fail and Touch calls of s wait for the
// next flush of its completer.
func Queued(s *Service) int { return s.completer.queued() }

// SetMaxFlushes sets how many flushes the completer of s runs at once.
func SetMaxFlushes(s *Service, n int) { s.completer.max = n }

// ClaimsQueued reports how many claims of s wait for the next batch of its
// claimer.
func ClaimsQueued(s *Service) int { return s.claimer.queued() }

// SetMaxClaims sets how many claim batches s runs at once.
func SetMaxClaims(s *Service, n int) { s.claimer.max = n }

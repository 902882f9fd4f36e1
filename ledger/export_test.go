package ledger

// Queued reports how many Complete, Fail and Touch calls of s wait for the
// next flush of its completer.
func Queued(s *Service) int { return s.completer.queued() }

// SetMaxFlushes sets how many flushes the completer of s runs at once.
func SetMaxFlushes(s *Service, n int) { s.completer.max = n }

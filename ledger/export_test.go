package ledger

// Queued reports how many Complete, Fail and Touch calls of s wait for the
// next flush of its completer.
func Queued(s *Service) int { return s.completer.queued() }

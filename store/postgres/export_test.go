package postgres

// ListenerPIDs returns the backend process ids of s's live listener
// connections (one per running WatchChanges).
func ListenerPIDs(s *Store) []uint32 { return s.listen.list() }

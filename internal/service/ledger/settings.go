package ledger

import "github.com/cks-dev/cks/internal/config"

// Settings are the ledger's knobs, the configuration's Ledger: the default
// lease (CKS_STALE_WINDOW) and the retry backoff (CKS_RETRY_BACKOFF),
// which a hub and the agents on one database read alike
// (config.ParseLedger), so a lease and a retry mean the same whichever
// process writes them.
type Settings = config.Ledger

// Configure sets the service's settings. Like NoteMovesTo it is called
// once, before the service is used (a hub and `cks agent` call it with
// the environment's, config.ParseLedger); a service never configured has
// config.DefaultLedger.
func (s *Service) Configure(set Settings) error {
	if err := set.Validate(); err != nil {
		return err
	}
	s.settings = set
	return nil
}

// Settings returns the service's settings.
func (s *Service) Settings() Settings { return s.settings }

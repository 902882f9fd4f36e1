package ledger

import (
	"fmt"
	"time"

	"github.com/cks-dev/cks"
)

// The variables of Settings, read alike by every process that opens the
// database — the hubs and the agents (SettingsFromEnv).
const (
	// EnvStaleWindow is the default lease, Settings.DefaultLease. The
	// name is older than the rule: it was once a grace period under every
	// lease, and it is now only the lease of a claim that names none.
	EnvStaleWindow = "CKS_STALE_WINDOW"
	// EnvRetryBackoff is Settings.RetryBackoff.
	EnvRetryBackoff = "CKS_RETRY_BACKOFF"
)

// Settings are the ledger's knobs. A hub and the agents on one database
// read them from the same variables (SettingsFromEnv), so a lease and a
// retry mean the same whichever process writes them.
type Settings struct {
	// DefaultLease is the lease of a claim or review claim that names none
	// (lease_s omitted): CKS_STALE_WINDOW, DefaultLease when unset, from
	// MinLease to MaxLease. A claim that names a lease gets that lease,
	// shorter or longer.
	DefaultLease time.Duration
	// RetryBackoff is how long a task whose attempt failed retryably
	// waits before it may be claimed again after its first attempt,
	// doubling with every further attempt up to BackoffMax, plus up to a
	// quarter of jitter (Backoff): CKS_RETRY_BACKOFF, BackoffBase (1 s)
	// when unset, from 0 (at once) to BackoffMax.
	RetryBackoff time.Duration
}

// DefaultSettings are the settings of a ledger that was given none.
func DefaultSettings() Settings {
	return Settings{DefaultLease: DefaultLease, RetryBackoff: BackoffBase}
}

// Validate refuses a default lease outside MinLease..MaxLease and a
// backoff outside 0..BackoffMax, naming the variable.
func (s Settings) Validate() error {
	switch {
	case s.DefaultLease < MinLease || s.DefaultLease > MaxLease:
		return fmt.Errorf("%s=%s: expected a default lease from %s to %s: %w", EnvStaleWindow, s.DefaultLease, MinLease, MaxLease, cks.ErrInvalid)
	case s.RetryBackoff < 0 || s.RetryBackoff > BackoffMax:
		return fmt.Errorf("%s=%s: expected a retry backoff from 0 (retry at once) to %s: %w", EnvRetryBackoff, s.RetryBackoff, BackoffMax, cks.ErrInvalid)
	}
	return nil
}

// SettingsFromEnv reads Settings with getenv (os.Getenv in a process):
// each variable is seconds ("30") or a Go duration ("30s"), as every
// duration of cks is (cks.ParseDuration); an unset one keeps its default.
// A bad value is an error naming the variable.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := DefaultSettings()
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{EnvStaleWindow, &s.DefaultLease}, {EnvRetryBackoff, &s.RetryBackoff}} {
		raw := getenv(v.name)
		if raw == "" {
			continue
		}
		d, err := cks.ParseDuration(raw)
		if err != nil {
			return s, fmt.Errorf("%s=%w: %w", v.name, err, cks.ErrInvalid)
		}
		*v.dst = d
	}
	return s, s.Validate()
}

// Configure sets the service's settings. Like NoteMovesTo it is called
// once, before the service is used (a hub and `cks agent` call it with
// SettingsFromEnv's); a service never configured has DefaultSettings.
func (s *Service) Configure(set Settings) error {
	if err := set.Validate(); err != nil {
		return err
	}
	s.settings = set
	return nil
}

// Settings returns the service's settings.
func (s *Service) Settings() Settings { return s.settings }

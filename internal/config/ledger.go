package config

import (
	"fmt"
	"time"

	"github.com/cks-dev/cks"
)

// The variables of Ledger, read alike by every process that opens the
// database — the hubs and the agents.
const (
	// EnvStaleWindow is the default lease, Ledger.DefaultLease. The name
	// is older than the rule: it was once a grace period under every
	// lease, and it is now only the lease of a claim that names none.
	EnvStaleWindow = "CKS_STALE_WINDOW"
	// EnvRetryBackoff is Ledger.RetryBackoff.
	EnvRetryBackoff = "CKS_RETRY_BACKOFF"
)

// The bound of a lease, the one every claim and review claim meets on every
// surface (ledger.MinLease, ledger.MaxLease), and the default of the lease
// of a claim that names none (Ledger.DefaultLease, CKS_STALE_WINDOW).
const (
	MinLease     = time.Second
	MaxLease     = 24 * time.Hour
	DefaultLease = 5 * time.Minute
)

// Retry backoff bounds (the ledger's backoff).
const (
	// BackoffBase is the delay after the first failed attempt when
	// Ledger.RetryBackoff is not set (CKS_RETRY_BACKOFF).
	BackoffBase = time.Second
	// BackoffMax caps the delay before jitter, and bounds
	// Ledger.RetryBackoff.
	BackoffMax = time.Hour
)

// Ledger are the ledger's knobs (ledger.Settings). A hub and the agents on
// one database read them from the same variables (ParseLedger), so a lease
// and a retry mean the same whichever process writes them.
type Ledger struct {
	// DefaultLease is the lease of a claim or review claim that names none
	// (lease_s omitted): CKS_STALE_WINDOW, DefaultLease when unset, from
	// MinLease to MaxLease. A claim that names a lease gets that lease,
	// shorter or longer.
	DefaultLease time.Duration
	// RetryBackoff is how long a task whose attempt failed retryably
	// waits before it may be claimed again after its first attempt,
	// doubling with every further attempt up to BackoffMax, plus up to a
	// quarter of jitter (the ledger's backoff): CKS_RETRY_BACKOFF, BackoffBase
	// (1 s) when unset, from 0 (at once) to BackoffMax.
	RetryBackoff time.Duration
}

// DefaultLedger are the settings of a ledger that was given none.
func DefaultLedger() Ledger {
	return Ledger{DefaultLease: DefaultLease, RetryBackoff: BackoffBase}
}

// Validate refuses a default lease outside MinLease..MaxLease and a
// backoff outside 0..BackoffMax, naming the variable.
func (s Ledger) Validate() error {
	switch {
	case s.DefaultLease < MinLease || s.DefaultLease > MaxLease:
		return fmt.Errorf("%s=%s: expected a default lease from %s to %s: %w", EnvStaleWindow, s.DefaultLease, MinLease, MaxLease, cks.ErrInvalid)
	case s.RetryBackoff < 0 || s.RetryBackoff > BackoffMax:
		return fmt.Errorf("%s=%s: expected a retry backoff from 0 (retry at once) to %s: %w", EnvRetryBackoff, s.RetryBackoff, BackoffMax, cks.ErrInvalid)
	}
	return nil
}

// ParseLedger reads Ledger with getenv (nil: an empty environment): each
// variable is seconds ("30") or a Go duration ("30s"), as every duration
// of cks is (cks.ParseDuration); an unset one keeps its default. A bad
// value is an error naming the variable.
func ParseLedger(getenv Getenv) (Ledger, error) {
	getenv = orEmpty(getenv)
	s := DefaultLedger()
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

// ledgerSettings are the ledger's, which the hubs and the agents read
// alike (ParseLedger).
func ledgerSettings() []Setting {
	readers := append(hubReaders(), agentWords(AgentKinds()...)...)
	return []Setting{
		{Env: EnvStaleWindow, Readers: readers,
			Doc: "the default lease: the lease of a claim that names none (claim_tasks without lease_s) and of a pipeline " +
				"object claim; an agent's default heartbeat is a third of it (at most 60s). A lease of any length ends when it " +
				"runs out unrenewed: the next claim takes the task back",
			Value: func(v *Values) string { return dur(v.Hub.Ledger.DefaultLease) }},
		{Env: EnvRetryBackoff, Readers: readers,
			Doc: "the delay before a task whose attempt failed retryably may be claimed again: this after the first " +
				"attempt, doubling with each further one up to 1h, plus up to a quarter of jitter; 0 retries at once",
			Value: func(v *Values) string { return dur(v.Hub.Ledger.RetryBackoff) }},
	}
}

// Package lease keeps a lease alive while work runs under it. The task
// ledger's leases (worker: Heartbeat every third of the lease, ADR 0020) and the
// knowledge store's object claims (pipeline: TouchClaim, ADR-007) are the
// same mechanism: renew every period, and when a renewal finds the lease
// gone, cancel the work. A Keeper is that mechanism, once.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/lifecycle"
)

// Config configures a Keeper.
type Config struct {
	// Every is the renewal period; it must be positive. The first renewal
	// is one period after Keep (the claim itself was the first).
	Every time.Duration
	// Renew renews the lease once. An error matching cks.ErrLeaseLost
	// means the lease is gone: the keeper cancels its context with that
	// error as the cause and renews no more. Any other error is logged and
	// the next period tries again (a dropped connection is not a lost
	// lease).
	Renew func(ctx context.Context) error
	// Clock times the periods; nil means clock.System.
	Clock clock.Clock
	// Logger receives failed renewals, with the caller's attributes (the
	// task or object id); nil is slog.Default().
	Logger *slog.Logger
}

// Keeper renews one lease every period on its own goroutine until Stop or
// until the lease is lost.
type Keeper struct {
	cfg    Config
	log    *slog.Logger
	cancel context.CancelCauseFunc // of the lease context
	base   *lifecycle.Base
}

// Keep starts keeping a lease: it returns the keeper and a context derived
// from ctx that is cancelled when ctx ends, when a renewal finds the lease
// lost (context.Cause then matches cks.ErrLeaseLost), or at Stop (cause
// lifecycle.ErrStopped). Run the work under that context and call Stop when
// it returns; the renewals go on until then, also after ctx ends, so the
// lease outlives the work's wind-down.
func Keep(ctx context.Context, cfg Config) (*Keeper, context.Context, error) {
	if cfg.Every <= 0 {
		return nil, nil, fmt.Errorf("lease: renewal period must be positive, got %v", cfg.Every)
	}
	if cfg.Renew == nil {
		return nil, nil, errors.New("lease: no renew function")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	lctx, cancel := context.WithCancelCause(ctx)
	k := &Keeper{cfg: cfg, log: log, cancel: cancel}
	k.base = lifecycle.New(lifecycle.Config{Run: k.run, OnPanic: func(v any, stack []byte) {
		log.Error("lease keeper panicked; the lease is no longer renewed", "panic", v, "stack", string(stack))
		cancel(fmt.Errorf("lease: keeper panicked: %v", v))
	}})
	// Not bounded by ctx: a fresh base starts at once, and the renewals
	// must run even when ctx has already ended (see above).
	if err := k.base.Start(context.WithoutCancel(ctx)); err != nil {
		cancel(err)
		return nil, nil, fmt.Errorf("lease: start keeper: %w", err)
	}
	return k, lctx, nil
}

// Stop ends the renewals, waits for the keeper's goroutine to exit (a
// renewal in flight finishes), and cancels the lease context with cause
// lifecycle.ErrStopped unless it already ended. It is safe to call more
// than once.
func (k *Keeper) Stop() {
	k.base.Stop(context.Background()) //nolint:errcheck // a background context never ends
	k.cancel(lifecycle.ErrStopped)
}

func (k *Keeper) run(ctx context.Context) {
	for {
		if clock.Sleep(ctx, k.cfg.Clock, k.cfg.Every, nil) != nil {
			return
		}
		err := k.cfg.Renew(ctx)
		switch {
		case errors.Is(err, cks.ErrLeaseLost):
			k.cancel(err)
			return
		case err != nil && ctx.Err() == nil:
			k.log.Warn("renewing a lease failed; retrying at the next period", "err", err, "every", k.cfg.Every)
		}
	}
}

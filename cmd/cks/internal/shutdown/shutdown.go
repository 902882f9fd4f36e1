// Package shutdown catches SIGINT and SIGTERM for the cks command from the
// first moment it can: its init, which runs before the inits of the heavy
// packages the command imports (the operations table, the studio's
// templates: ~150 ms on an idle machine, more on a loaded one). A signal
// that arrives before a handler is installed kills a Go program at once;
// one caught here is kept until main asks (Context), so a SIGTERM sent as
// soon as an agent starts drains it like any other instead of killing it.
//
// It imports nothing but the standard library's os, os/signal and syscall,
// so that it is initialised as soon as those are (packages are initialised
// dependencies first, then in import path order).
package shutdown

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// EnvTestReady, when set, makes the process write ReadyLine to stderr as
// soon as the signals are caught: the process-level test of an early
// SIGTERM sends its signal on that line (test only).
const EnvTestReady = "CKS_TEST_SIGNALS_READY"

// ReadyLine is what EnvTestReady makes the process write.
const ReadyLine = "cks: catching SIGINT and SIGTERM"

// caught receives every SIGINT and SIGTERM from init on. Its buffer holds
// the signals that arrive before Context reads it.
var caught = make(chan os.Signal, 8)

func init() {
	signal.Notify(caught, os.Interrupt, syscall.SIGTERM)
	if os.Getenv(EnvTestReady) != "" {
		os.Stderr.WriteString(ReadyLine + "\n") //nolint:errcheck // a test's marker
	}
}

var (
	once  sync.Once
	again = make(chan os.Signal, 8)
)

// Context returns a context that ends at the first SIGINT or SIGTERM the
// process received — before the call too — and starts passing every later
// one to Again. stop ends the watch and restores the signals' default
// behaviour. Call it once, in main.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := true
		for {
			select {
			case <-done:
				return
			case s := <-caught:
				if first {
					first = false
					cancel()
					continue
				}
				select {
				case again <- s:
				default: // nobody reads them: enough are queued
				}
			}
		}
	}()
	return ctx, func() {
		once.Do(func() {
			signal.Stop(caught)
			close(done)
			wg.Wait()
			cancel()
		})
	}
}

// Again receives each SIGINT or SIGTERM after the first (which ended
// Context's context): a second signal hurries a drain, a third exits. It
// never receives in a process whose main did not call Context (the
// command's own tests run it in process).
func Again() <-chan os.Signal { return again }

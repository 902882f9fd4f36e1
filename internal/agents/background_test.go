package agents_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// runBackground runs an agent of kind pipeline with bg as its background
// function and returns its reporter and a channel with Run's result.
func runBackground(t *testing.T, ctx context.Context, open backendtest.Opener, bg func(context.Context) error) (*liveness.Reporter, <-chan error) {
	t.Helper()
	return runWith(t, ctx, agents.ServicesOf(open(t)), settings("pipeline"), nil, agents.Options{Background: bg})
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestBackground: the background function runs for the agent's lifetime; a
// signal and a stop request both cancel it, Run waits for it, returns nil,
// and the row reads stopped. One that fails by itself stops the agent with
// its error; one that ends by itself stops it with nil.
func TestBackground(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		for _, how := range []string{"signal", "stop request"} {
			t.Run(how, func(t *testing.T) {
				ctx, signal := context.WithCancel(context.Background())
				defer signal()
				running, returned := make(chan struct{}), make(chan struct{})
				rep, done := runBackground(t, ctx, open, func(ctx context.Context) error {
					close(running)
					<-ctx.Done()
					time.Sleep(20 * time.Millisecond) // a slow shutdown is waited for
					close(returned)
					return ctx.Err()
				})
				<-running
				if how == "signal" {
					signal()
				} else if res, err := liveness.NewService(open(t).Driver(), nil).RequestStop(context.Background(), rep.InstanceID()); err != nil || !res.Found {
					t.Fatalf("RequestStop = %+v, %v", res, err)
				}
				if err := result(t, done); err != nil {
					t.Fatalf("Run: %v", err)
				}
				select {
				case <-returned:
				default:
					t.Fatal("Run returned before the background function did")
				}
				row, err := open(t).Liveness.GetAgentLiveness(context.Background(), rep.InstanceID())
				if err != nil || row.ExitedAt.IsZero() {
					t.Fatalf("row after exit %+v, %v", row, err)
				}
			})
		}
		t.Run("fails", func(t *testing.T) {
			boom := errors.New("corpus vanished")
			_, done := runBackground(t, context.Background(), open, func(context.Context) error { return boom })
			if err := result(t, done); !errors.Is(err, boom) {
				t.Fatalf("Run = %v, want the background error", err)
			}
		})
		t.Run("ends", func(t *testing.T) {
			_, done := runBackground(t, context.Background(), open, func(context.Context) error { return nil })
			if err := result(t, done); err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
		})
	})
}

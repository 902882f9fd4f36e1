// Package waitfor holds the tests' waits. A test never sleeps for a
// state to arrive: it waits for the state itself, checking a condition
// until it holds, and gives up only after Limit — a deadline far past any
// machine's pace, which a passing test never comes near, so that a loaded
// machine slows a test down but never fails it.
package waitfor

import (
	"context"
	"testing"
	"time"
)

// Limit is how long a wait lasts before the test fails.
const Limit = time.Minute

// every is how often Until checks its condition.
const every = 5 * time.Millisecond

// Until checks cond every few milliseconds until it holds, and fails t,
// naming what it waited for, when it has not held within Limit.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", Limit, what)
		}
		time.Sleep(every)
	}
}

// Ctx returns a context that ends after Limit (or at the test's cleanup): the
// bound of a call that waits for something itself (a fake clock's armed
// timers, a channel).
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Limit)
	t.Cleanup(cancel)
	return ctx
}

package api

import (
	"container/list"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// Throttling of failed authentication (issue 22, finding 7). A client
// address that fails to authenticate more than FailureLimit times within
// FailureWindow has its further failures answered 429 (Retry-After: the
// seconds left of its window) until the window ends, and the hub logs one
// security event per address and window, not one line per attempt.
//
// Only failures are refused, never a request with valid credentials from a
// throttled address. Why: a token or session secret is 256 random bits, so
// guessing is not the risk; the cost of a flood is log noise, CPU and
// database reads. And every agent `cks dev` starts, and the operator's CLI
// and browser, connect from 127.0.0.1: refusing all of a throttled address
// would let one misconfigured agent (or a stale script) lock out the whole
// local fleet. A failure is a presented credential that does not
// authenticate (a bearer token, a session cookie, a login form's token); a
// request without any credential is no attempt and is not counted.
//
// The address is the connection's (RemoteAddr), never X-Forwarded-For: a
// client sets that header as it likes, to dodge the limit or to get
// another address throttled. Behind a reverse proxy every client shares the
// proxy's address, whose failures then count together.
//
// Memory is bounded: at most FailureClients addresses are tracked. The
// entries are kept in the order their windows started (a window starts at
// the first failure after the previous one ended, so the order is that of
// the clock), expired ones are dropped from the front as they are met, and
// when the table is full the oldest window is forgotten to make room: an
// attacker with many source addresses can make the hub forget an address's
// count early, never grow the table.

// Throttling defaults.
const (
	DefaultFailureLimit   = 10
	DefaultFailureWindow  = time.Minute
	DefaultFailureClients = 10000
)

// failureLimiter counts authentication failures per client address in
// fixed windows. One lives in each API (so in each hub process).
type failureLimiter struct {
	clock  clock.Clock
	log    *slog.Logger
	limit  int
	window time.Duration
	max    int

	mu    sync.Mutex
	byIP  map[string]*list.Element // of *failures
	order *list.List               // of *failures, oldest window first
}

// failures are one address's failures in its current window.
type failures struct {
	ip     string
	start  time.Time // by the clock's Monotonic
	count  int
	logged bool
}

func newFailureLimiter(c clock.Clock, log *slog.Logger, limit int, window time.Duration, max int) *failureLimiter {
	return &failureLimiter{clock: c, log: log, limit: limit, window: window, max: max,
		byIP: map[string]*list.Element{}, order: list.New()}
}

// fail records a failure of ip and reports whether it is over the limit,
// and then how long its window still lasts.
func (l *failureLimiter) fail(ip string) (retryAfter time.Duration, throttled bool) {
	now := l.clock.Monotonic()
	l.mu.Lock()
	defer l.mu.Unlock()
	for e := l.order.Front(); e != nil && now.Sub(e.Value.(*failures).start) >= l.window; e = l.order.Front() {
		l.forget(e)
	}
	e, ok := l.byIP[ip]
	if !ok {
		if l.order.Len() >= l.max {
			l.forget(l.order.Front())
		}
		e = l.order.PushBack(&failures{ip: ip, start: now})
		l.byIP[ip] = e
	}
	f := e.Value.(*failures)
	f.count++
	if f.count <= l.limit {
		return 0, false
	}
	if !f.logged {
		f.logged = true
		l.log.Warn("security: repeated authentication failures; further failures from this address are answered 429 until the window ends",
			"event", "auth_failures", "ip", ip, "count", f.count, "window", l.window)
	}
	return f.start.Add(l.window).Sub(now), true
}

func (l *failureLimiter) forget(e *list.Element) {
	delete(l.byIP, e.Value.(*failures).ip)
	l.order.Remove(e)
}

// clientIP is the address of r's connection, without its port.
func clientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// retryAfter sets Retry-After to wait in whole seconds, at least 1.
func retryAfter(w http.ResponseWriter, wait time.Duration) int {
	s := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(s))
	return s
}

// writeThrottled answers a throttled failure of an API request: 429 with
// Retry-After and the JSON error body.
func writeThrottled(w http.ResponseWriter, wait time.Duration) {
	s := retryAfter(w, wait)
	WriteError(w, http.StatusTooManyRequests, cks.CodeTooManyFailures,
		"too many failed authentications from this address; try again in "+strconv.Itoa(s)+" s")
}

package ledger

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cks-dev/cks"
)

// StatsTTL is how long one read of TaskStats answers every caller of the
// same window: the /charts page refreshes every 2 s in each open tab, and
// the read costs about half a second of the database at 30k tasks an
// hour, so many tabs would otherwise read it many times a refresh.
const StatsTTL = 2 * time.Second

// ttl is how long an answer of w is kept: StatsTTL per minute of its step
// (2 s by the minute, 30 s by 15 minutes, 4 min by 2 hours). A wider window
// reads more events (a week's are 168 hours' worth), and a coarser step
// changes the answer less for the same time.
func (w StatsWindow) ttl() time.Duration { return StatsTTL * time.Duration(w.Step) }

// readCache keeps the answer of an expensive whole-ledger read for a
// short while and makes concurrent callers share one read (singleflight):
// the first caller of a key starts it, the others wait for its answer. A
// failed read is shared by its waiters but not kept. An answer of key k is
// kept for ttl(k) of the service's clock; an entry goes once it expired and
// another key is asked for, so the map holds the keys asked for within
// their ttl. The reads it serves read the whole ledger, the same for every
// principal their permission admits (checked by the surface before the
// call), so there is no narrower visible scope to key on. TaskStats keys it
// on its window; UnclaimedTypes on nothing.
type readCache[K comparable, V any] struct {
	mu      sync.Mutex
	entries map[K]*readEntry[V]
	// read is the read a miss runs (tests wrap it).
	read func(ctx context.Context, k K) (V, error)
	// ttl is how long an answer of k is kept.
	ttl func(k K) time.Duration
	// clone copies an answer for each caller, so none shares a kept one's
	// maps and slices; nil hands out the answer as it is.
	clone func(V) V
	// waiting, when set, is called each time a caller starts waiting for
	// another's read (tests).
	waiting func()
}

// readEntry is one key's read: in flight until done is closed, then its
// answer, read at the clock's at.
type readEntry[V any] struct {
	done chan struct{}
	at   time.Time
	v    V
	err  error
}

// get answers key k at now: the kept answer when younger than ttl(k), the
// read in flight when there is one, else a new read. The read runs
// detached from ctx's cancellation (one caller leaving does not fail the
// others); a caller whose ctx ends stops waiting with its error.
func (c *readCache[K, V]) get(ctx context.Context, k K, now time.Time) (V, error) {
	c.mu.Lock()
	e := c.entries[k]
	if e != nil {
		select {
		case <-e.done:
			if e.err != nil || now.Sub(e.at) >= c.ttl(k) || now.Before(e.at) {
				e = nil // failed, expired, or read at a later time than now
			}
		default:
			if c.waiting != nil {
				c.waiting()
			}
		}
	}
	if e == nil {
		e = &readEntry[V]{done: make(chan struct{}), at: now}
		if c.entries == nil {
			c.entries = map[K]*readEntry[V]{}
		}
		c.dropExpired(now)
		c.entries[k] = e
		go func(ctx context.Context) {
			e.v, e.err = c.read(ctx, k)
			close(e.done)
		}(context.WithoutCancel(ctx))
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		if c.clone != nil {
			return c.clone(e.v), e.err
		}
		return e.v, e.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// dropExpired forgets the answers older than their key's ttl at now (c.mu
// held): TaskStats' windows are many (minutes and step), so the map keeps
// only those asked for lately.
func (c *readCache[K, V]) dropExpired(now time.Time) {
	for k, e := range c.entries {
		select {
		case <-e.done:
			if now.Sub(e.at) >= c.ttl(k) || now.Before(e.at) {
				delete(c.entries, k)
			}
		default: // in flight: its callers wait for it
		}
	}
}

// cloneStats is a copy of st that shares nothing with it (its minutes and
// their depth maps): every caller of a kept answer gets its own.
func cloneStats(st cks.TaskStats) cks.TaskStats {
	if st.Minutes == nil {
		return st
	}
	st.Minutes = slices.Clone(st.Minutes)
	for i := range st.Minutes {
		st.Minutes[i].Depth = maps.Clone(st.Minutes[i].Depth)
	}
	return st
}

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

// statsCache holds the last TaskStats of each window (minutes and step) for
// its ttl (StatsTTL by the minute) of the service's clock, and makes
// concurrent callers of a window share one read (singleflight): the first caller starts it, the
// others wait for its answer. A failed read is shared by its waiters but
// not kept. The key is the window alone: task_stats reads the whole
// ledger, the same for every principal its permission admits (checked by
// the surface before the call), so there is no narrower visible scope to
// key on. An entry goes once it expires and another window is asked for,
// so the map holds the windows asked for within their ttl.
type statsCache struct {
	mu      sync.Mutex
	entries map[StatsWindow]*statsEntry
	// read is the read a miss runs (Service.readStats; tests wrap it).
	read func(ctx context.Context, w StatsWindow) (cks.TaskStats, error)
	// waiting, when set, is called each time a caller starts waiting for
	// another's read (tests).
	waiting func()
}

// statsEntry is one window's read: in flight until done is closed, then
// its answer, read at the clock's at.
type statsEntry struct {
	done  chan struct{}
	at    time.Time
	stats cks.TaskStats
	err   error
}

// get answers window w at now: the kept answer when younger than
// w.ttl(), the read in flight when there is one, else a new read. The
// read runs detached from ctx's cancellation (one caller leaving does not
// fail the others); a caller whose ctx ends stops waiting with its error.
func (c *statsCache) get(ctx context.Context, w StatsWindow, now time.Time) (cks.TaskStats, error) {
	c.mu.Lock()
	e := c.entries[w]
	if e != nil {
		select {
		case <-e.done:
			if e.err != nil || now.Sub(e.at) >= w.ttl() || now.Before(e.at) {
				e = nil // failed, expired, or read at a later time than now
			}
		default:
			if c.waiting != nil {
				c.waiting()
			}
		}
	}
	if e == nil {
		e = &statsEntry{done: make(chan struct{}), at: now}
		if c.entries == nil {
			c.entries = map[StatsWindow]*statsEntry{}
		}
		c.dropExpired(now)
		c.entries[w] = e
		go func(ctx context.Context) {
			e.stats, e.err = c.read(ctx, w)
			close(e.done)
		}(context.WithoutCancel(ctx))
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return cloneStats(e.stats), e.err
	case <-ctx.Done():
		return cks.TaskStats{}, ctx.Err()
	}
}

// dropExpired forgets the answers older than their window's ttl at now
// (c.mu held): the windows are many (minutes and step), so the map keeps
// only those asked for lately.
func (c *statsCache) dropExpired(now time.Time) {
	for w, e := range c.entries {
		select {
		case <-e.done:
			if now.Sub(e.at) >= w.ttl() || now.Before(e.at) {
				delete(c.entries, w)
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

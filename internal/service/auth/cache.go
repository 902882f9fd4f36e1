package auth

import (
	"context"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// A hub authenticates every request, and an agent sends its token with each:
// a long poll's re-poll every minute, a busy agent's claims and heartbeats
// several times a second. So that this costs the database nothing, the
// principals that tokens authenticate, with their grants, are kept in memory
// by token hash (never the token) once the service follows the change
// listener (CacheTokens), and revocations reach the cache as they happen:
//   - a principal deleted through this service drops the cache before
//     DeletePrincipal returns: the next request refuses its token;
//   - one deleted by another process on the database (another hub, a CLI on
//     the same file) publishes cks.TopicPrincipals in its transaction, and
//     the cache drops when it arrives — and whenever the listener
//     (re)connects, since notifications may have been missed while it was
//     down; until it first connects nothing is cached;
//   - an entry is used for at most TokenCacheTTL, which bounds how long a
//     notification lost without the listener noticing goes unseen;
//   - a credential bound to a task's lease is never cached: it authenticates
//     only while its lease is current, which the read that finds it decides;
//   - an unknown token is not cached (guesses cannot fill the cache), and it
//     holds at most TokenCacheMax principals, dropped whole when full.

// TokenCacheTTL is how long a cached principal is used before it is read
// again.
const TokenCacheTTL = 5 * time.Minute

// TokenCacheMax bounds the principals the cache holds: a fleet of this many
// agents, each with a token of its own, is served from memory.
const TokenCacheMax = 65536

// Watcher is the change listener the token cache follows (a
// notifier.Notifier).
type Watcher interface {
	WatchChanges(ctx context.Context, topics []string, f func(topic string)) error
}

// tokenCache is the principals of recent tokens, by token hash.
type tokenCache struct {
	changes Watcher
	clk     clock.Clock

	mu      sync.Mutex
	started bool   // the watch runs
	live    bool   // the watch is established: entries may be kept
	gen     uint64 // counts the drops: a read that began before one is not kept
	entries map[string]cachedAuth
}

// cachedAuth is what a token authenticated: its principal and grants.
type cachedAuth struct {
	p      cks.Principal
	grants []cks.Grant
	at     time.Time
}

// CacheTokens has s keep the principals of the tokens it authenticates in
// memory, dropped on every revocation changes delivers (see above); clk
// times the entries. The hub's backend calls it; a service without it reads
// the database for every token.
func (s *Service) CacheTokens(changes Watcher, clk clock.Clock) {
	s.tokens = &tokenCache{changes: changes, clk: clk, entries: map[string]cachedAuth{}}
}

// get returns the cached principal of hash, and the generation to keep a
// read of it under (put) when there is none.
func (c *tokenCache) get(hash string) (cachedAuth, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started = true
		// It ends when the listener does (the backend closes); its first
		// call, once established, makes the cache live.
		go c.changes.WatchChanges(context.Background(), []string{cks.TopicPrincipals}, func(string) { //nolint:errcheck // ends with the listener
			c.drop(true)
		})
	}
	e, ok := c.entries[hash]
	if ok && c.clk.Now().Sub(e.at) >= TokenCacheTTL {
		delete(c.entries, hash)
		ok = false
	}
	return e, ok, c.gen
}

// put keeps what hash authenticated, unless the cache dropped since gen (a
// revocation may have come after the read) or is not live yet.
func (c *tokenCache) put(hash string, gen uint64, p cks.Principal, grants []cks.Grant) {
	if p.Lease != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.gen != gen {
		return
	}
	if len(c.entries) >= TokenCacheMax {
		c.entries = map[string]cachedAuth{}
	}
	c.entries[hash] = cachedAuth{p: p, grants: grants, at: c.clk.Now()}
}

// drop forgets every entry; live says the watch is established.
func (c *tokenCache) drop(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.live = c.live || live
	clear(c.entries)
}

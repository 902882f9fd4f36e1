package auth

import (
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// TestTokenCacheKeeps: what the cache keeps and what it refuses to — a read
// that began before a drop (a revocation may have come after it), anything
// before the listener is live, a credential bound to a lease — and that a
// full cache starts over instead of growing.
func TestTokenCacheKeeps(t *testing.T) {
	c := &tokenCache{clk: clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), started: true, entries: map[string]cachedAuth{}}
	p := cks.Principal{ID: "p"}
	_, _, gen := c.get("h")
	c.put("h", gen, p, nil)
	if _, ok, _ := c.get("h"); ok {
		t.Fatal("kept before the listener is live")
	}
	c.drop(true)
	_, _, gen = c.get("h")
	c.drop(false) // a revocation during the read
	c.put("h", gen, p, nil)
	if _, ok, _ := c.get("h"); ok {
		t.Fatal("kept a read that began before a drop")
	}
	_, _, gen = c.get("h")
	c.put("h", gen, cks.Principal{ID: "lease", Lease: &cks.LeaseBinding{TaskID: 1}}, nil)
	if _, ok, _ := c.get("h"); ok {
		t.Fatal("kept a credential bound to a lease")
	}
	c.put("h", gen, p, nil)
	if e, ok, _ := c.get("h"); !ok || e.p.ID != "p" {
		t.Fatalf("not kept: %v %v", e, ok)
	}
	for i := range TokenCacheMax {
		c.put(string(rune(i+1000)), gen, p, nil)
	}
	if len(c.entries) > TokenCacheMax {
		t.Fatalf("%d entries, past the bound %d", len(c.entries), TokenCacheMax)
	}
}

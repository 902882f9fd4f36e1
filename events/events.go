// Package events is the in-process event bus of a cks process. Events are
// wake-up signals, not data: a subscriber that receives one re-reads the state
// it cares about, so a dropped or coalesced event loses nothing.
package events

import (
	"sync"
	"time"
)

// Event types published on the bus.
const (
	// ProcessesChanged: a liveness row or a computed process status changed.
	ProcessesChanged = "processes"
	// SweepersChanged: a sweeper was started or stopped, here or on another node.
	SweepersChanged = "sweepers"
)

// Event is one notification.
type Event struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`
}

// Bus fans events out to subscribers. A slow subscriber misses events rather
// than blocking publishers; since events carry no payload that is harmless.
// The zero value is ready to use.
type Bus struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

// Subscribe returns a channel of events and a function that ends the
// subscription and closes the channel.
func (b *Bus) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 16)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan Event]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// Publish delivers e to every subscriber that has room for it.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

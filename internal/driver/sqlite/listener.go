package sqlite

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// Listener implements driver.Driver: a poll of cks_changes on the reader
// pool every change poll interval (driver.WithChangePollInterval), woken
// early by every commit of this Driver that notified.
func (d *Driver) Listener() driver.Listener { return &listener{d: d} }

// listener is the SQLite driver.Listener.
type listener struct {
	d      *Driver
	ticker *time.Ticker
	// wake is closed by the next commit of d that notified. It is taken
	// before each poll, so a commit between the poll and the wait is not
	// lost.
	wake <-chan struct{}
	last map[string]int64 // counters at the previous poll
}

var errNotConnected = errors.New("sqlite: listener not connected")

// Connect reads the counters the next WaitForTopics compares with.
func (l *listener) Connect(ctx context.Context) error {
	wake := l.d.local.changed()
	seqs, err := l.poll(ctx)
	if err != nil {
		return err
	}
	l.wake, l.last = wake, seqs
	if l.ticker == nil {
		l.ticker = time.NewTicker(l.d.pollInterval)
	}
	return nil
}

// WaitForTopics returns the topics whose counter moved since the previous
// call (or Connect), sorted, waiting for a tick or a local commit until one
// did or ctx ends. A failed poll is returned: the caller reconnects.
func (l *listener) WaitForTopics(ctx context.Context) ([]string, error) {
	if l.ticker == nil {
		return nil, errNotConnected
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.ticker.C:
		case <-l.wake:
		}
		wake := l.d.local.changed()
		seqs, err := l.poll(ctx)
		if err != nil {
			return nil, err
		}
		var topics []string
		for t, n := range seqs {
			if l.last[t] != n {
				topics = append(topics, t)
			}
		}
		l.wake, l.last = wake, seqs
		if len(topics) > 0 {
			slices.Sort(topics)
			return topics, nil
		}
	}
}

// Close stops the listener's ticker; Connect may be called again.
func (l *listener) Close(context.Context) error {
	if l.ticker != nil {
		l.ticker.Stop()
		l.ticker = nil
	}
	return nil
}

func (l *listener) poll(ctx context.Context) (map[string]int64, error) {
	rows, err := l.d.q.ChangeList(ctx, l.d.reader)
	if err != nil {
		return nil, mapErr("listener poll", err)
	}
	seqs := make(map[string]int64, len(rows))
	for _, r := range rows {
		seqs[r.Topic] = r.Seq
	}
	return seqs, nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cks-dev/cks/store"
)

// SetSweeperDesiredRunning implements store.SweeperControl.
func (s *Store) SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error {
	if err := store.ValidateSweeperID(id); err != nil {
		return err
	}
	return s.write(ctx, "set sweeper control", func(tx *wtx, now time.Time) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO cks_sweeper_control (agent_id, desired_running, updated_at)
VALUES (?, ?, ?)
ON CONFLICT(agent_id) DO UPDATE SET desired_running = excluded.desired_running, updated_at = excluded.updated_at`,
			id, running, fmtTime(now))
		if err != nil {
			return fmt.Errorf("sqlite: set sweeper control %q: %w", id, err)
		}
		return publish(ctx, tx, store.TopicSweeperControl)
	})
}

// GetSweeperDesiredRunning implements store.SweeperControl.
func (s *Store) GetSweeperDesiredRunning(ctx context.Context, id string) (*bool, error) {
	if err := store.ValidateSweeperID(id); err != nil {
		return nil, err
	}
	var running bool
	err := s.reader.QueryRowContext(ctx, `SELECT desired_running FROM cks_sweeper_control WHERE agent_id = ?`, id).Scan(&running)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get sweeper control %q: %w", id, err)
	}
	return &running, nil
}

// publish records a change on topic in tx: it bumps the topic's counter in
// cks_changes, which watchers of every process poll, and marks tx so that
// watchers on this handle are woken as soon as it commits. Every write that
// affects a Changes topic calls it in its own transaction.
func publish(ctx context.Context, tx *wtx, topic string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO cks_changes (topic, seq) VALUES (?, 1)
ON CONFLICT(topic) DO UPDATE SET seq = seq + 1`, topic)
	if err != nil {
		return fmt.Errorf("sqlite: publish change %q: %w", topic, err)
	}
	tx.published = true
	return nil
}

// localChanges wakes the watchers of one handle after a commit that published
// a change, so they need not wait for their next poll.
type localChanges struct {
	ch chan struct{} // closed and replaced by wake
}

// changed returns a channel that is closed at the next wake.
func (s *Store) changed() <-chan struct{} {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.local.ch == nil {
		s.local.ch = make(chan struct{})
	}
	return s.local.ch
}

// wake closes the channel changed returned to every watcher of this handle.
func (s *Store) wake() {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.local.ch != nil {
		close(s.local.ch)
		s.local.ch = nil
	}
}

// WatchChanges implements store.Changes by polling cks_changes on the read
// pool every ChangePollInterval (store.WithChangePollInterval), and at once
// after a write through this handle published a change. f is called for
// every topic whose counter moved since the previous poll; a failed poll is
// retried at the next tick (the counters make sure nothing is missed).
func (s *Store) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	set, err := store.ValidateTopics(topics)
	if err != nil {
		return err
	}
	list := make([]string, 0, len(set))
	for t := range set {
		list = append(list, t)
	}
	slices.Sort(list) // f sees topics in a stable order
	a := &args{}
	q := `SELECT topic, seq FROM cks_changes WHERE topic IN ` + a.list(list)
	poll := func() (map[string]int64, error) {
		rows, err := s.reader.QueryContext(ctx, q, a.vals...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		seqs := make(map[string]int64, len(list))
		for rows.Next() {
			var (
				t   string
				seq int64
			)
			if err := rows.Scan(&t, &seq); err != nil {
				return nil, err
			}
			seqs[t] = seq
		}
		return seqs, rows.Err()
	}
	ticker := time.NewTicker(s.pollInterval)
	defer ticker.Stop()
	// The wake channel is taken before each poll, so a commit between the
	// poll and the wait is not lost.
	wake := s.changed()
	last, err := poll()
	for err != nil { // establish the baseline, retrying until it reads
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-wake:
		}
		wake = s.changed()
		last, err = poll()
	}
	for _, t := range list {
		f(t)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-wake:
		}
		wake = s.changed()
		seqs, err := poll()
		if err != nil {
			continue // transient (busy, closed handle): the next tick retries
		}
		for _, t := range list {
			if seqs[t] != last[t] {
				f(t)
			}
		}
		last = seqs
	}
}

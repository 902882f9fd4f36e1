package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

// SetSweeperDesiredRunning implements store.SweeperControl.
func (s *Store) SetSweeperDesiredRunning(ctx context.Context, id string, running bool) error {
	if err := store.ValidateSweeperID(id); err != nil {
		return err
	}
	return s.write(ctx, "set sweeper control", func(tx pgx.Tx, now time.Time) error {
		_, err := tx.Exec(ctx, `INSERT INTO cks_sweeper_control (agent_id, desired_running, updated_at)
VALUES ($1, $2, $3)
ON CONFLICT (agent_id) DO UPDATE SET desired_running = excluded.desired_running, updated_at = excluded.updated_at`,
			id, running, now)
		if err != nil {
			return fmt.Errorf("postgres: set sweeper control %q: %w", id, err)
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
	err := s.pool.QueryRow(ctx, `SELECT desired_running FROM cks_sweeper_control WHERE agent_id = $1`, id).Scan(&running)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get sweeper control %q: %w", id, err)
	}
	return &running, nil
}

// ChangesChannel is the one LISTEN/NOTIFY channel of cks. Each notification's
// payload is "<schema>.<topic>": the schema (current_schema() of the writer)
// scopes it, since NOTIFY is database-wide and several cks deployments (or
// test schemas) may share one database; a watcher ignores other schemas'.
const ChangesChannel = "cks_changes"

// publish records a change on topic in tx: a NOTIFY on ChangesChannel, which
// Postgres delivers to the listeners when (and only if) tx commits. Every
// write that affects a Changes topic calls it in its own transaction.
func publish(ctx context.Context, tx pgx.Tx, topic string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify('`+ChangesChannel+`', current_schema() || '.' || $1::text)`, topic); err != nil {
		return fmt.Errorf("postgres: publish change %q: %w", topic, err)
	}
	return nil
}

// Timing of WatchChanges' dedicated connection.
const (
	// ListenReconnectMin is the first wait before reconnecting a lost
	// listener connection; it doubles (with jitter) up to ListenReconnectMax
	// while connecting fails, and starts again after a successful connect.
	ListenReconnectMin = 100 * time.Millisecond
	// ListenReconnectMax caps the reconnect wait.
	ListenReconnectMax = 5 * time.Second
	// ListenPingInterval is how long the listener waits without a
	// notification before it pings the server, so a silently dropped
	// connection (NAT, failover) is noticed and replaced.
	ListenPingInterval = 30 * time.Second
)

// listeners tracks the backend process ids of the live listener connections
// of one Store (for tests and diagnostics).
type listeners struct {
	mu   sync.Mutex
	pids map[uint32]int
}

func (l *listeners) add(pid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pids == nil {
		l.pids = map[uint32]int{}
	}
	l.pids[pid]++
}

func (l *listeners) remove(pid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pids[pid]--; l.pids[pid] <= 0 {
		delete(l.pids, pid)
	}
}

func (l *listeners) list() []uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]uint32, 0, len(l.pids))
	for pid := range l.pids {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// WatchChanges implements store.Changes with LISTEN on one dedicated
// connection (not from the pool; Close does not end it, ctx does). When the
// connection is lost it reconnects, waiting ListenReconnectMin doubling to
// ListenReconnectMax between failed attempts, and after each (re)connect
// calls f once for every topic. Notifications of other schemas are ignored.
func (s *Store) WatchChanges(ctx context.Context, topics []string, f func(topic string)) error {
	set, err := store.ValidateTopics(topics)
	if err != nil {
		return err
	}
	list := make([]string, 0, len(set))
	for t := range set {
		list = append(list, t)
	}
	slices.Sort(list)
	wait := ListenReconnectMin
	for {
		established, _ := s.listenOnce(ctx, list, set, f)
		if ctx.Err() != nil {
			return nil
		}
		// The error is not returned (the doc's contract); the retry is the
		// handling. A caller wanting to see it can watch the database.
		if established {
			wait = ListenReconnectMin
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, ListenReconnectMax)
	}
}

// listenOnce connects, LISTENs, calls f for every topic and then for every
// notification of a watched topic, until ctx ends or the connection fails.
// established reports whether it got as far as listening.
func (s *Store) listenOnce(ctx context.Context, list []string, set map[string]bool, f func(string)) (established bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return false, fmt.Errorf("postgres: listener connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx) //nolint:errcheck // the connection is being abandoned
	}()
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return false, fmt.Errorf("postgres: listener schema: %w", err)
	}
	if schema == nil {
		return false, errors.New("postgres: listener: no schema of the search_path exists")
	}
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel); err != nil {
		return false, fmt.Errorf("postgres: listen: %w", err)
	}
	pid := conn.PgConn().PID()
	s.listen.add(pid)
	defer s.listen.remove(pid)
	for _, t := range list {
		f(t)
	}
	prefix := *schema + "."
	for {
		wctx, cancel := context.WithTimeout(ctx, ListenPingInterval)
		n, err := conn.WaitForNotification(wctx)
		idle := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case ctx.Err() != nil:
			return true, nil
		case err != nil && idle && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, fmt.Errorf("postgres: listener ping: %w", err)
			}
		case err != nil:
			return true, fmt.Errorf("postgres: listener: %w", err)
		default:
			if topic, ok := strings.CutPrefix(n.Payload, prefix); ok && set[topic] {
				f(topic)
			}
		}
	}
}

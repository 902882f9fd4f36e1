package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/jackc/pgx/v5"
)

// ListenPingInterval is how long a listener waits without a notification
// before it pings the server, so a silently dropped connection (NAT,
// failover) is noticed: the ping fails and WaitForTopics returns the error.
const ListenPingInterval = 30 * time.Second

// Listener implements driver.Driver: LISTEN on one connection of its own,
// outside the pool (so it neither holds a pool slot nor is closed with the
// pool), keeping the notifications of this driver's schema.
func (d *Driver) Listener() driver.Listener { return &Listener{d: d} }

// Listener is the Postgres driver.Listener.
type Listener struct {
	d      *Driver
	conn   *pgx.Conn
	prefix string // "<schema>.": the payloads that are this schema's
	// silent: connected behind a transaction pooler with no cks_listen
	// server; no notification ever arrives.
	silent bool
}

var errNotConnected = errors.New("postgres: listener not connected")

// Connect opens the listener's connection and LISTENs on the changes
// channel.
func (l *Listener) Connect(ctx context.Context) error {
	if l.conn != nil {
		return errors.New("postgres: listener already connected")
	}
	cfg, ok := l.d.pooler.listenConfig(l.d.pool.Config().ConnConfig)
	if !ok {
		// Behind a transaction pooler with no server to LISTEN on: nothing
		// is pushed, and WaitForTopics waits for its context.
		l.silent = true
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return mapErr("listener connect", err)
	}
	schema, err := l.d.q.CurrentSchema(ctx, conn)
	if err == nil {
		err = l.d.q.ChangeListen(ctx, conn)
	}
	if err != nil {
		conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // abandoned
		return mapErr("listen", err)
	}
	l.conn, l.prefix = conn, schema+"."
	return nil
}

// WaitForTopics returns the topics of this schema notified since the
// previous call, sorted: the first one to arrive and any others already
// received with it. When no notification arrives for ListenPingInterval it
// pings the server; a lost connection is returned as an error (the caller
// closes the listener and connects again).
func (l *Listener) WaitForTopics(ctx context.Context) ([]string, error) {
	if l.silent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if l.conn == nil {
		return nil, errNotConnected
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, ListenPingInterval)
		n, err := l.conn.WaitForNotification(wctx)
		idle := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && idle && !l.conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
			err = l.conn.Ping(pctx)
			cancel()
			if err != nil {
				return nil, mapErr("listener ping", err)
			}
			continue
		case err != nil:
			return nil, mapErr("listener", err)
		}
		topics := l.add(nil, n.Payload)
		// Take the notifications already received too, without waiting:
		// with a done context pgx only hands out what it has buffered.
		done, stop := context.WithCancel(ctx)
		stop()
		for {
			n, err := l.conn.WaitForNotification(done)
			if err != nil || n == nil {
				break
			}
			topics = l.add(topics, n.Payload)
		}
		if len(topics) > 0 {
			slices.Sort(topics)
			return topics, nil
		}
	}
}

// add appends the topic of payload to topics when it is of this schema and
// not there yet.
func (l *Listener) add(topics []string, payload string) []string {
	topic, ok := strings.CutPrefix(payload, l.prefix)
	if !ok || slices.Contains(topics, topic) {
		return topics
	}
	return append(topics, topic)
}

// PID returns the server process id of the listener's connection (0 when
// not connected), for tests and diagnostics.
func (l *Listener) PID() uint32 {
	if l.conn == nil {
		return 0
	}
	return l.conn.PgConn().PID()
}

// Close ends the listener's connection; Connect may be called again.
func (l *Listener) Close(ctx context.Context) error {
	l.silent = false
	if l.conn == nil {
		return nil
	}
	conn := l.conn
	l.conn = nil
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return conn.Close(cctx)
}

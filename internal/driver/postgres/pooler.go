package postgres

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The parameters of cks itself in a Postgres URL. They are read and removed
// before the URL reaches pgx, which would send an unknown parameter to the
// server as a run-time parameter (and a pooler would refuse it).
const (
	// ParamPooler, "transaction", says the URL names a pooler in transaction
	// mode (PgBouncer's pool_mode = transaction): consecutive statements
	// may run on different server connections, so cks prepares no named
	// statement (pgx's QueryExecModeCacheDescribe: each statement's types
	// are described once, then every execution is one unnamed
	// parse-bind-execute round trip) and relies on no session state — a
	// search_path must then be the role's or the database's default
	// (ALTER ROLE … SET search_path), not the URL's.
	ParamPooler = "cks_pooler"
	// ParamListen, HOST:PORT, is where the change listener connects
	// directly, past the pooler (a LISTEN needs a session of its own);
	// without it behind a pooler no change is pushed and every watcher
	// moves on its own polls.
	ParamListen = "cks_listen"
)

// poolerConfig is what the cks parameters of a URL ask.
type poolerConfig struct {
	// transaction: behind a transaction-mode pooler.
	transaction bool
	// listenHost and listenPort, when set, are where LISTEN connects.
	listenHost string
	listenPort uint16
}

// splitParams removes the cks parameters from rawURL (a URL or a libpq
// keyword/value connection string) and returns what pgx parses and what
// they ask. A bad value is an error wrapping cks.ErrInvalid.
func splitParams(rawURL string) (string, poolerConfig, error) {
	var pc poolerConfig
	if !strings.Contains(rawURL, "cks_") {
		return rawURL, pc, nil
	}
	if kv, ok := ParseKeywords(rawURL); ok {
		q, rest := url.Values{}, kv[:0:0]
		for _, p := range kv {
			if p.Key == ParamPooler || p.Key == ParamListen {
				q.Set(p.Key, p.Value)
			} else {
				rest = append(rest, p)
			}
		}
		pc, err := pc.read(q)
		if err != nil {
			return "", pc, err
		}
		return JoinKeywords(rest), pc, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL, pc, nil // pgx says what is wrong with it
	}
	q := u.Query()
	if pc, err = pc.read(q); err != nil {
		return "", pc, err
	}
	q.Del(ParamPooler)
	q.Del(ParamListen)
	u.RawQuery = q.Encode()
	return u.String(), pc, nil
}

// read reads the cks parameters of q into pc.
func (pc poolerConfig) read(q url.Values) (poolerConfig, error) {
	switch v := q.Get(ParamPooler); v {
	case "":
	case "transaction":
		pc.transaction = true
	default:
		return pc, fmt.Errorf("postgres: %s=%q: expected %s=transaction (a pooler in transaction mode): %w",
			ParamPooler, v, ParamPooler, cks.ErrInvalid)
	}
	if v := q.Get(ParamListen); v != "" {
		host, port, err := net.SplitHostPort(v)
		var p uint64
		if err == nil {
			_, err = fmt.Sscan(port, &p)
		}
		if err != nil || host == "" || p == 0 || p > 65535 {
			return pc, fmt.Errorf("postgres: %s=%q: expected HOST:PORT of the server past the pooler: %w",
				ParamListen, v, cks.ErrInvalid)
		}
		pc.listenHost, pc.listenPort = host, uint16(p)
	}
	return pc, nil
}

// apply configures the pool for a transaction-mode pooler.
func (pc poolerConfig) apply(cfg *pgxpool.Config) error {
	if !pc.transaction {
		return nil
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["search_path"]; ok {
		return errors.New("postgres: search_path in the URL is a session setting a transaction pooler does not keep; " +
			"set it on the role or the database (ALTER ROLE … SET search_path = …) and leave it out of the URL")
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	return nil
}

// listenConfig is the connection configuration of the change listener:
// the pool's, or the server past the pooler when the URL names one; ok is
// false behind a pooler with no such server (no LISTEN is possible).
func (pc poolerConfig) listenConfig(pool *pgx.ConnConfig) (*pgx.ConnConfig, bool) {
	cfg := pool.Copy()
	switch {
	case pc.listenHost != "":
		cfg.Host, cfg.Port = pc.listenHost, pc.listenPort
		cfg.Fallbacks = nil
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
		return cfg, true
	case pc.transaction:
		return nil, false
	}
	return cfg, true
}

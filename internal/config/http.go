package config

import (
	"cmp"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The variables of HTTP.
const (
	EnvHTTPReadTimeout                   = "CKS_HTTP_READ_TIMEOUT"
	EnvHTTPWriteTimeout                  = "CKS_HTTP_WRITE_TIMEOUT"
	EnvHTTPIdleTimeout                   = "CKS_HTTP_IDLE_TIMEOUT"
	EnvHTTPMaxConnsPerIP                 = "CKS_HTTP_MAX_CONNS_PER_IP"
	EnvMCPMaxSessions                    = "CKS_MCP_MAX_SESSIONS"
	EnvMCPMaxSessionsPerToken            = "CKS_MCP_MAX_SESSIONS_PER_TOKEN"
	EnvMCPSessionIdleTimeout             = "CKS_MCP_SESSION_IDLE_TIMEOUT"
	EnvMCPUnsubscribedSessionIdleTimeout = "CKS_MCP_UNSUBSCRIBED_SESSION_IDLE_TIMEOUT"
	EnvMCPProgressInterval               = "CKS_MCP_PROGRESS_INTERVAL"
	// EnvSecureCookie and EnvTrustedProxies are the studio cookie's
	// Secure attribute's.
	EnvSecureCookie   = "CKS_HTTP_SECURE_COOKIE"
	EnvTrustedProxies = "CKS_HTTP_TRUSTED_PROXIES"
)

// Defaults of HTTP.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConnsPerIP     = 4096
)

// Defaults of the MCP endpoint (mcpserver.HTTPOptions and ServerOptions
// apply them to what is left zero).
const (
	DefaultMCPMaxSessions             = 256
	DefaultMCPMaxSessionsPerToken     = 32
	DefaultMCPSessionIdle             = 30 * time.Minute
	DefaultMCPUnsubscribedSessionIdle = 5 * time.Minute
	// DefaultMCPProgressInterval is well under the 60 s a client's request
	// times out after by default.
	DefaultMCPProgressInterval = 10 * time.Second
)

// HTTP bound the hub's client connections, so that slow or greedy clients
// cannot hold it: a request must arrive whole within ReadTimeout and its
// answer leave within WriteTimeout, an idle keep-alive connection is
// closed after IdleTimeout, and one client address holds at most
// MaxConnsPerIP connections at once. The event stream (/v1/events) and /mcp
// are exempt from both timeouts (they stream for as long as their client
// stays), and a stop or update that waits for an abort confirmation gets its
// wait (up to cks.MaxAbortDeadline) on top of WriteTimeout. A zero field
// takes its default (WithDefaults; the MCP endpoint's fill in their own).
type HTTP struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10 s;
	// no variable).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body
	// (CKS_HTTP_READ_TIMEOUT, default 30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds handling a request and writing its answer, from
	// the end of its headers (CKS_HTTP_WRITE_TIMEOUT, default 60 s).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request
	// for this long (CKS_HTTP_IDLE_TIMEOUT, default 2 m).
	IdleTimeout time.Duration
	// MaxConnsPerIP caps the open connections of one client IP address
	// (CKS_HTTP_MAX_CONNS_PER_IP, default 4096; 0 in the environment, or
	// a negative value here, turns the cap off). A connection over the cap
	// is answered 503 too_many_connections and closed. A fleet of agents on
	// one host shares one address, and each of its long-polling agents
	// holds a connection while it waits (and a second while it heartbeats),
	// hence a default that admits a fleet of 2,000 on one host; a few
	// thousand idle connections cost the hub a few MB (docs/benchmarks.md,
	// "A fleet on one hub").
	MaxConnsPerIP int
	// EventKeepAlive is the interval of the keep-alive comments of every
	// event stream: /v1/events and /mcp's (no variable; default 15 s, well
	// under the 300 s after which Node's fetch drops a silent stream).
	EventKeepAlive time.Duration
	// MCPMaxSessions caps the MCP sessions /mcp keeps open at once
	// (CKS_MCP_MAX_SESSIONS, default DefaultMCPMaxSessions); an
	// initialize over it closes the longest-idle session.
	MCPMaxSessions int
	// MCPMaxSessionsPerToken caps those of one token
	// (CKS_MCP_MAX_SESSIONS_PER_TOKEN, default
	// DefaultMCPMaxSessionsPerToken); its initialize over it closes its
	// own longest-idle session.
	MCPMaxSessionsPerToken int
	// MCPSessionIdle closes an MCP session holding subscriptions that has
	// no request in flight and no open GET stream for this long
	// (CKS_MCP_SESSION_IDLE_TIMEOUT, default DefaultMCPSessionIdle).
	MCPSessionIdle time.Duration
	// MCPUnsubscribedSessionIdle is MCPSessionIdle for a session holding
	// none (CKS_MCP_UNSUBSCRIBED_SESSION_IDLE_TIMEOUT, default
	// DefaultMCPUnsubscribedSessionIdle).
	MCPUnsubscribedSessionIdle time.Duration
	// MCPProgressInterval is the interval of the progress notifications of
	// an MCP call that waits (CKS_MCP_PROGRESS_INTERVAL, default
	// DefaultMCPProgressInterval).
	MCPProgressInterval time.Duration
	// SecureCookie marks the studio's cookie Secure on every answer, for a
	// hub reached through a TLS-terminating proxy only
	// (CKS_HTTP_SECURE_COOKIE=true; api.Config.SecureCookie).
	SecureCookie bool
	// TrustedProxies are the proxies whose X-Forwarded-Proto says whether
	// the browser used HTTPS (CKS_HTTP_TRUSTED_PROXIES: IP addresses or
	// CIDR prefixes, comma-separated; api.Config.TrustedProxies).
	TrustedProxies []netip.Prefix
}

// ParseHTTP reads HTTP with getenv (nil: none set), leaving zero what is
// unset; a bad value is an error naming the variable and what was
// expected.
func ParseHTTP(getenv Getenv) (HTTP, error) {
	getenv = orEmpty(getenv)
	var s HTTP
	var err error
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{EnvHTTPReadTimeout, &s.ReadTimeout},
		{EnvHTTPWriteTimeout, &s.WriteTimeout},
		{EnvHTTPIdleTimeout, &s.IdleTimeout},
		{EnvMCPSessionIdleTimeout, &s.MCPSessionIdle},
		{EnvMCPUnsubscribedSessionIdleTimeout, &s.MCPUnsubscribedSessionIdle},
		{EnvMCPProgressInterval, &s.MCPProgressInterval},
	} {
		if *d.to, err = durationSetting(getenv, d.name, 0); err != nil {
			return s, err
		}
	}
	if v := getenv(EnvHTTPMaxConnsPerIP); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("%s=%q: expected a number of connections (0 for no cap)", EnvHTTPMaxConnsPerIP, v)
		}
		if s.MaxConnsPerIP = n; n == 0 {
			s.MaxConnsPerIP = -1
		}
	}
	for _, c := range []struct {
		name string
		to   *int
	}{{EnvMCPMaxSessions, &s.MCPMaxSessions}, {EnvMCPMaxSessionsPerToken, &s.MCPMaxSessionsPerToken}} {
		if v := getenv(c.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return s, fmt.Errorf("%s=%q: expected a positive number of sessions", c.name, v)
			}
			*c.to = n
		}
	}
	if v := getenv(EnvSecureCookie); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("%s=%q: expected true or false", EnvSecureCookie, v)
		}
		s.SecureCookie = b
	}
	if s.TrustedProxies, err = parsePrefixes(getenv(EnvTrustedProxies)); err != nil {
		return s, fmt.Errorf("%s: %w", EnvTrustedProxies, err)
	}
	return s, nil
}

// parsePrefixes reads a comma-separated list of IP addresses (one host
// each) and CIDR prefixes; "" is none.
func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q: expected IP addresses or CIDR prefixes such as 10.0.0.5 or 10.0.0.0/8, comma-separated", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// WithDefaults fills the zero fields of the hub's server's with their
// defaults (the MCP endpoint's fill in their own).
func (s HTTP) WithDefaults() HTTP {
	s.ReadHeaderTimeout = cmp.Or(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	s.ReadTimeout = cmp.Or(s.ReadTimeout, DefaultReadTimeout)
	s.WriteTimeout = cmp.Or(s.WriteTimeout, DefaultWriteTimeout)
	s.IdleTimeout = cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
	s.MaxConnsPerIP = cmp.Or(s.MaxConnsPerIP, DefaultMaxConnsPerIP)
	return s
}

// httpSettings are the hub's HTTP server's and its MCP endpoint's.
func httpSettings() []Setting {
	hubs := hubReaders()
	return []Setting{
		{Env: EnvHTTPReadTimeout, Readers: hubs, Doc: "how long a request may take to arrive",
			Value: func(v *Values) string { return dur(cmp.Or(v.HTTP.ReadTimeout, DefaultReadTimeout)) }},
		{Env: EnvHTTPWriteTimeout, Readers: hubs, Doc: "how long an answer may take (streams lift it)",
			Value: func(v *Values) string { return dur(cmp.Or(v.HTTP.WriteTimeout, DefaultWriteTimeout)) }},
		{Env: EnvHTTPIdleTimeout, Readers: hubs, Doc: "how long an idle keep-alive connection stays open",
			Value: func(v *Values) string { return dur(cmp.Or(v.HTTP.IdleTimeout, DefaultIdleTimeout)) }},
		{Env: EnvMCPMaxSessions, Readers: hubs,
			Doc: "MCP sessions /mcp keeps open at once (an initialize over it closes the longest-idle one)",
			Value: func(v *Values) string {
				return strconv.Itoa(cmp.Or(v.HTTP.MCPMaxSessions, DefaultMCPMaxSessions))
			}},
		{Env: EnvMCPMaxSessionsPerToken, Readers: hubs,
			Doc: "MCP sessions one token holds at once (its initialize over it closes its own longest-idle one)",
			Value: func(v *Values) string {
				return strconv.Itoa(cmp.Or(v.HTTP.MCPMaxSessionsPerToken, DefaultMCPMaxSessionsPerToken))
			}},
		{Env: EnvMCPSessionIdleTimeout, Readers: hubs,
			Doc:   "how long an MCP session holding subscriptions stays open idle (no request in flight, no GET stream open)",
			Value: func(v *Values) string { return dur(cmp.Or(v.HTTP.MCPSessionIdle, DefaultMCPSessionIdle)) }},
		{Env: EnvMCPUnsubscribedSessionIdleTimeout, Readers: hubs,
			Doc: "how long an MCP session holding no subscription stays open idle",
			Value: func(v *Values) string {
				return dur(cmp.Or(v.HTTP.MCPUnsubscribedSessionIdle, DefaultMCPUnsubscribedSessionIdle))
			}},
		{Env: EnvMCPProgressInterval, Readers: hubs,
			Doc: "the interval of the progress notifications of an MCP call that waits (a stop awaiting an abort confirmation)",
			Value: func(v *Values) string {
				return dur(cmp.Or(v.HTTP.MCPProgressInterval, DefaultMCPProgressInterval))
			}},
		{Env: EnvSecureCookie, Readers: hubs,
			Doc: "mark the studio's session cookie Secure on every answer: set it when browsers reach the hub through a " +
				"TLS-terminating proxy only (else the cookie is Secure when the hub serves TLS itself or a trusted proxy says HTTPS)",
			Value: func(v *Values) string { return strconv.FormatBool(v.HTTP.SecureCookie) }},
		{Env: EnvTrustedProxies, Readers: hubs,
			Doc: "the proxies (IP addresses or CIDR prefixes, comma-separated) whose X-Forwarded-Proto: https marks the " +
				"studio's cookie Secure; the header of any other client is ignored",
			Value: func(v *Values) string {
				var ps []string
				for _, p := range v.HTTP.TrustedProxies {
					ps = append(ps, p.String())
				}
				return strings.Join(ps, ",")
			}},
		{Env: EnvHTTPMaxConnsPerIP, Readers: hubs, Doc: "open connections of one client IP (0: no cap): every agent, " +
			"browser tab and MCP client behind one address (a NAT, a proxy, one host's 500 agents) shares it — raise it, or set 0, " +
			"for such a fleet",
			Value: func(v *Values) string {
				switch n := v.HTTP.MaxConnsPerIP; {
				case n < 0:
					return "0"
				case n == 0:
					return strconv.Itoa(DefaultMaxConnsPerIP)
				default:
					return strconv.Itoa(n)
				}
			}},
	}
}

package hub

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPSettings bound the hub's client connections, so that slow or greedy
// clients cannot hold it: a request must arrive whole within ReadTimeout and
// its answer leave within WriteTimeout, an idle keep-alive connection is
// closed after IdleTimeout, and one client address holds at most
// MaxConnsPerIP connections at once. The event stream (/v1/events) and /mcp
// are exempt from both timeouts (they stream for as long as their client
// stays), and a stop or update that waits for an abort confirmation gets its
// wait (up to cks.MaxAbortDeadline) on top of WriteTimeout.
type HTTPSettings struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10 s).
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
	// event stream: /v1/events and /mcp's (default 15 s, well under the
	// 300 s after which Node's fetch drops a silent stream).
	EventKeepAlive time.Duration
	// MCPMaxSessions caps the MCP sessions /mcp keeps open at once
	// (CKS_MCP_MAX_SESSIONS, default mcpserver.DefaultMaxSessions); an
	// initialize over it closes the longest-idle session.
	MCPMaxSessions int
	// MCPMaxSessionsPerToken caps those of one token
	// (CKS_MCP_MAX_SESSIONS_PER_TOKEN, default
	// mcpserver.DefaultMaxSessionsPerToken); its initialize over it closes
	// its own longest-idle session.
	MCPMaxSessionsPerToken int
	// MCPSessionIdle closes an MCP session holding subscriptions that has
	// no request in flight and no open GET stream for this long
	// (CKS_MCP_SESSION_IDLE_TIMEOUT, default mcpserver.DefaultSessionIdle).
	MCPSessionIdle time.Duration
	// MCPUnsubscribedSessionIdle is MCPSessionIdle for a session holding
	// none (CKS_MCP_UNSUBSCRIBED_SESSION_IDLE_TIMEOUT, default
	// mcpserver.DefaultUnsubscribedSessionIdle).
	MCPUnsubscribedSessionIdle time.Duration
	// MCPProgressInterval is the interval of the progress notifications of
	// an MCP call that waits (CKS_MCP_PROGRESS_INTERVAL, default
	// mcpserver.DefaultProgressEvery).
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

// Defaults of HTTPSettings.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConnsPerIP     = 4096
)

// ParseHTTPSettings reads HTTPSettings with getenv (nil: none set); a bad
// value is an error naming the variable and what was expected.
func ParseHTTPSettings(getenv func(string) string) (HTTPSettings, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var s HTTPSettings
	var err error
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{"CKS_HTTP_READ_TIMEOUT", &s.ReadTimeout},
		{"CKS_HTTP_WRITE_TIMEOUT", &s.WriteTimeout},
		{"CKS_HTTP_IDLE_TIMEOUT", &s.IdleTimeout},
		{"CKS_MCP_SESSION_IDLE_TIMEOUT", &s.MCPSessionIdle},
		{"CKS_MCP_UNSUBSCRIBED_SESSION_IDLE_TIMEOUT", &s.MCPUnsubscribedSessionIdle},
		{"CKS_MCP_PROGRESS_INTERVAL", &s.MCPProgressInterval},
	} {
		if *d.to, err = durationSetting(getenv, d.name, 0); err != nil {
			return s, err
		}
	}
	if v := getenv("CKS_HTTP_MAX_CONNS_PER_IP"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("CKS_HTTP_MAX_CONNS_PER_IP=%q: expected a number of connections (0 for no cap)", v)
		}
		if s.MaxConnsPerIP = n; n == 0 {
			s.MaxConnsPerIP = -1
		}
	}
	for _, c := range []struct {
		name string
		to   *int
	}{{"CKS_MCP_MAX_SESSIONS", &s.MCPMaxSessions}, {"CKS_MCP_MAX_SESSIONS_PER_TOKEN", &s.MCPMaxSessionsPerToken}} {
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
	if s.TrustedProxies, err = ParsePrefixes(getenv(EnvTrustedProxies)); err != nil {
		return s, fmt.Errorf("%s: %w", EnvTrustedProxies, err)
	}
	return s, nil
}

// The variables of the studio cookie's Secure attribute.
const (
	EnvSecureCookie   = "CKS_HTTP_SECURE_COOKIE"
	EnvTrustedProxies = "CKS_HTTP_TRUSTED_PROXIES"
)

// ParsePrefixes reads a comma-separated list of IP addresses (one host
// each) and CIDR prefixes; "" is none.
func ParsePrefixes(v string) ([]netip.Prefix, error) {
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

// over returns s with the non-zero fields of o.
func (s HTTPSettings) over(o HTTPSettings) HTTPSettings {
	set := func(to *time.Duration, v time.Duration) {
		if v != 0 {
			*to = v
		}
	}
	set(&s.ReadHeaderTimeout, o.ReadHeaderTimeout)
	set(&s.ReadTimeout, o.ReadTimeout)
	set(&s.WriteTimeout, o.WriteTimeout)
	set(&s.IdleTimeout, o.IdleTimeout)
	set(&s.EventKeepAlive, o.EventKeepAlive)
	set(&s.MCPSessionIdle, o.MCPSessionIdle)
	set(&s.MCPUnsubscribedSessionIdle, o.MCPUnsubscribedSessionIdle)
	set(&s.MCPProgressInterval, o.MCPProgressInterval)
	if o.MCPMaxSessions != 0 {
		s.MCPMaxSessions = o.MCPMaxSessions
	}
	if o.MCPMaxSessionsPerToken != 0 {
		s.MCPMaxSessionsPerToken = o.MCPMaxSessionsPerToken
	}
	if o.MaxConnsPerIP != 0 {
		s.MaxConnsPerIP = o.MaxConnsPerIP
	}
	s.SecureCookie = s.SecureCookie || o.SecureCookie
	if len(o.TrustedProxies) > 0 {
		s.TrustedProxies = o.TrustedProxies
	}
	return s
}

// withDefaults fills the zero fields of s with the defaults.
func (s HTTPSettings) withDefaults() HTTPSettings {
	return HTTPSettings{ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadTimeout: DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout, MaxConnsPerIP: DefaultMaxConnsPerIP}.over(s)
}

// LimitConns wraps ln so that it holds at most max connections per client
// IP address at once (no cap when max <= 0). A connection over the cap is
// answered a 503 and closed at once, without reaching the HTTP server; the
// others are counted until they are closed.
func LimitConns(ln net.Listener, max int, log *slog.Logger) net.Listener {
	if max <= 0 {
		return ln
	}
	if log == nil {
		log = slog.Default()
	}
	return &connLimiter{Listener: ln, max: max, log: log, open: map[string]int{}}
}

type connLimiter struct {
	net.Listener
	max int
	log *slog.Logger

	mu      sync.Mutex
	open    map[string]int // by client IP
	refused int            // since the last warning
	warned  time.Time
}

// refusalWarnEvery rate-limits the warning about refused connections.
const refusalWarnEvery = 10 * time.Second

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if l.acquire(ip) {
			return &limitedConn{Conn: c, release: sync.OnceFunc(func() { l.release(ip) })}, nil
		}
		l.refuse(c, ip)
	}
}

func (l *connLimiter) acquire(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.max {
		return false
	}
	l.open[ip]++
	return true
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// refuse answers c with a 503 and closes it. The write goes into a fresh
// socket's empty send buffer, so it does not hold up Accept; the deadline
// bounds it all the same.
func (l *connLimiter) refuse(c net.Conn, ip string) {
	body := fmt.Sprintf(`{"error":{"code":"too_many_connections","message":"client %s already holds %d connections to this hub, the limit per client address (CKS_HTTP_MAX_CONNS_PER_IP)"}}`+"\n", ip, l.max)
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)) //nolint:errcheck // best effort
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
	l.mu.Lock()
	l.refused++
	n, warn := l.refused, time.Since(l.warned) >= refusalWarnEvery
	if warn {
		l.refused, l.warned = 0, time.Now()
	}
	l.mu.Unlock()
	if warn {
		l.log.Warn("refused connections over the per-client cap", "client", ip, "cap", l.max, "refused", n)
	}
}

// limitedConn gives its slot back when closed (the server closes every
// connection it accepted, once).
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// clientIP is the IP address of a remote address (the whole string when it
// has no port).
func clientIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

package hub

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

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

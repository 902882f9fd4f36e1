package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClusterConfig configures a throwaway PostgreSQL cluster.
type ClusterConfig struct {
	// Bin is the directory of initdb, pg_ctl and postgres
	// (default /usr/lib/postgresql/15/bin).
	Bin string
	// Parent is where the cluster's temporary directory is made
	// (default os.TempDir()). It should be on a real disk: fsync on tmpfs
	// costs nothing.
	Parent string
	// NotDurable turns fsync, synchronous_commit and full_page_writes off
	// (the cluster is durable by default).
	NotDurable bool
}

// Cluster is a running throwaway cluster; Stop removes it.
type Cluster struct {
	// URL is the postgres:// URL of its database "postgres".
	URL string
	// Settings are the -c settings it was started with.
	Settings []string
	dir      string
	bin      string
	asPG     []string
}

// clusterSettings are the server settings of a throwaway cluster. The
// durability settings are Postgres's defaults, spelled out. Checkpoints are
// kept out of the runs (max_wal_size, checkpoint_timeout; a CHECKPOINT
// precedes each run instead), so no run pays another's full-page writes.
func clusterSettings(durable bool) []string {
	on := "on"
	if !durable {
		on = "off"
	}
	return []string{
		"fsync=" + on, "synchronous_commit=" + on, "full_page_writes=" + on,
		"shared_preload_libraries=pg_stat_statements",
		"pg_stat_statements.max=10000", "pg_stat_statements.track=top", "pg_stat_statements.track_utility=on",
		"max_connections=300", "shared_buffers=512MB",
		"max_wal_size=8GB", "checkpoint_timeout=1h",
	}
}

// StartCluster initialises and starts a cluster on 127.0.0.1 at a free
// port, with trust authentication. As root it runs the server binaries as
// the postgres user (initdb refuses root), as scripts/with-postgres does.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	c := &Cluster{bin: cfg.Bin, Settings: clusterSettings(!cfg.NotDurable)}
	if c.bin == "" {
		c.bin = "/usr/lib/postgresql/15/bin"
	}
	if _, err := os.Stat(filepath.Join(c.bin, "initdb")); err != nil {
		return nil, fmt.Errorf("peers: no PostgreSQL server binaries in %s (Debian: apt-get install postgresql-15): %w", c.bin, err)
	}
	dir, err := os.MkdirTemp(cfg.Parent, "cks-peers-pg.")
	if err != nil {
		return nil, fmt.Errorf("peers: cluster directory: %w", err)
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("peers: running as root and there is no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("peers: cluster directory: %w", err)
		}
		c.asPG = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := c.pg(ctx, "initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("peers: initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		opts := []string{"-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1"}
		for _, s := range c.Settings {
			opts = append(opts, "-c", s)
		}
		out, err := c.pg(ctx, "pg_ctl", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(dir, "log"), "start", "-o", strings.Join(opts, " "))
		if err == nil {
			c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			return c, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		lastErr = fmt.Errorf("pg_ctl start: %w\n%s%s", err, out, tail(log, 20))
		if !bytes.Contains(log, []byte("could not bind")) && !bytes.Contains(log, []byte("already in use")) {
			break
		}
		os.Truncate(filepath.Join(dir, "log"), 0) // lost a race for the port: try another
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("peers: start PostgreSQL: %w", lastErr)
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop(ctx context.Context) error {
	out, err := c.pg(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		err = fmt.Errorf("peers: stop PostgreSQL: %w\n%s", err, out)
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// pg runs a server binary from the cluster directory (the postgres user may
// not be able to read the current one).
func (c *Cluster) pg(ctx context.Context, name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.asPG...), filepath.Join(c.bin, name)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

// freePort returns a port nothing listens on at 127.0.0.1 just now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

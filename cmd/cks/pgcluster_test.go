package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pgCluster is a PostgreSQL server of the test's own, which it may crash and
// restart: the fault-injection test's database restart.
//
// Why a real server and not pg_terminate_backend on the shared test server:
// a restart is what happens to users (connections refused while it is down,
// then crash recovery), where terminating backends only cuts connections of
// a server that stays up; and it is cheap — initdb takes about 1.3 s and an
// immediate stop plus a start about 0.25 s on the 2-core CI machine, against
// the minute of the run. The shared server cannot be restarted under the
// other tests, hence a cluster per run.
type pgCluster struct {
	bin  string // directory of initdb, pg_ctl
	dir  string // data in dir/data, the log in dir/log, the socket in dir
	port int
	// asPG runs the binaries as the postgres user when the test runs as
	// root: initdb and postgres refuse root.
	asPG []string
}

// startPGCluster initialises and starts a cluster in a temp directory,
// stopped and removed at the end of the test. It returns nil when there are
// no server binaries (/usr/lib/postgresql/*/bin) to run, or when running as
// root without a postgres user to run them as.
func startPGCluster(t testing.TB) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil
	}
	// The highest version, as scripts/with-postgres picks.
	slices.SortFunc(bins, func(a, b string) int { return pgVersion(a) - pgVersion(b) })
	c := &pgCluster{bin: filepath.Dir(bins[len(bins)-1])}
	// Not t.TempDir: the postgres user must be able to reach the directory.
	dir, err := os.MkdirTemp("", "cks-fault-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() {
		c.stop() //nolint:errcheck // not running is fine
		os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Logf("running as root without a postgres user: %v", err)
			return nil
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.asPG = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := c.pg("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A free port outside Linux's ephemeral range (32768–60999), so that no
	// outgoing connection takes it while the server is down.
	for range 10 {
		c.port = 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)))
		if err != nil {
			continue
		}
		ln.Close()
		if err = c.start(); err == nil {
			return c
		}
		if log, _ := os.ReadFile(filepath.Join(dir, "log")); !strings.Contains(string(log), "could not bind") {
			t.Fatalf("starting postgres: %v", err)
		}
	}
	t.Fatalf("starting postgres: no free port found")
	return nil
}

func pgVersion(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// url is the database URL of the cluster's postgres database.
func (c *pgCluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// start starts the server and waits until it accepts connections. fsync is
// off (the test crashes processes, not the machine, so the OS keeps every
// write), but synchronous_commit stays on: with it off an immediate stop
// loses the last commits, which the test would rightly count as lost.
func (c *pgCluster) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", c.port, c.dir)
	out, err := c.pg("pg_ctl", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "start", "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return nil
}

// stop is an immediate shutdown, the closest pg_ctl has to a crash: every
// server process quits at once and the next start runs crash recovery.
func (c *pgCluster) stop() error {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := c.pg("pg_ctl", "-w", "-t", "60", "-D", c.data(), "-m", "immediate", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// pg runs one of the server binaries from the cluster's directory (which
// the postgres user can read, unlike the test's working directory).
func (c *pgCluster) pg(name string, args ...string) ([]byte, error) {
	argv := append(append(slices.Clone(c.asPG), filepath.Join(c.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

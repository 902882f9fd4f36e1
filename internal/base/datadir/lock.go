package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked means another process holds a data directory's hub lock.
var ErrLocked = errors.New("the data directory is in use by another hub")

// LockFile is the file a hub holds its lock on (flock), with its pid in it.
func (d Dir) LockFile() string { return filepath.Join(string(d), "hub.lock") }

// Lock is a data directory's hub lock. One hub serves from a data directory
// at a time: the directory's hub.url and admin token are one hub's, and the
// embedded SQLite database is meant for one host's one hub (agent processes
// that open the database directly take no lock).
type Lock struct{ f *os.File }

// Lock takes the directory's hub lock without waiting, creating the
// directory (DirMode) and the lock file (FileMode) if needed, and writes this
// process's pid into it. When another process holds the lock, the error
// wraps ErrLocked and names that process's pid. The kernel releases the
// lock when the holder exits, however it exits (kill -9 included), so a
// stale lock file never blocks a new hub.
func (d Dir) Lock() (*Lock, error) {
	if err := d.MkdirAll(); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", d, err)
	}
	f, err := os.OpenFile(d.LockFile(), os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", d.LockFile(), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(d.LockFile()); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = fmt.Sprintf("process %d", pid)
				}
			}
			return nil, fmt.Errorf("%s holds %s: %w", holder, d.LockFile(), ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", d.LockFile(), err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) //nolint:errcheck // the pid only informs the error above
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The lock file stays (removing it would let a
// hub starting meanwhile lock a file no other hub can see).
func (l *Lock) Unlock() error { return l.f.Close() }

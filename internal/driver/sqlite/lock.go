package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrInUse means a process has the database open: LockExclusive cannot
// have it, or Open cannot have its shared lock while a restore holds it.
var ErrInUse = errors.New("the database is in use by another process")

// LockFile is the file beside the database at path that every Driver of
// it holds a shared lock on (flock) from Open to Close, and that a restore
// locks exclusively (LockExclusive): whether any process has the database
// open is then a lock the kernel keeps, and drops however its holder
// exits (kill -9 included). SQLite's own locks cannot tell it: a process
// between transactions holds none. The file is empty and stays (removing
// it would let a process lock a file the holder of the old one cannot see).
func LockFile(path string) string { return path + "-lock" }

// FileLock is a held lock on a database's LockFile.
type FileLock struct{ f *os.File }

// Unlock releases the lock. A nil FileLock (a database whose lock file
// could not be made) unlocks nothing.
func (l *FileLock) Unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}

// LockExclusive takes the exclusive lock on the database at path without
// waiting, so that no Driver opens it until Unlock (Open waits for it).
// When a process has the database open the error wraps ErrInUse and names
// the processes that hold it (their pids and program names, from
// /proc/locks where there is one).
func LockExclusive(path string) (*FileLock, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite: %s has %s open: %w", holders(f, false), path, ErrInUse)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", LockFile(path), err)
	}
	return &FileLock{f: f}, nil
}

// lockShared takes the shared lock a Driver holds on the database at path,
// waiting while a restore holds it exclusively, at most WriteLockTimeout
// or until ctx ends. It returns nil, and no error, when the lock file can
// neither be made nor opened (a read-only directory: then no restore can
// replace the database either).
func lockShared(ctx context.Context, path string) (*FileLock, error) {
	f, err := openLockFile(path)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(WriteLockTimeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return &FileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("sqlite: lock %s: %w", LockFile(path), err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			who := holders(f, true)
			f.Close()
			return nil, errors.Join(fmt.Errorf("sqlite: %s holds %s exclusively (a restore replaces the database): %w",
				who, LockFile(path), ErrInUse), ctx.Err())
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// openLockFile opens (creating, mode 0600) the lock file of the database
// at path; read-only when it exists but may not be written (flock needs no
// write access). When it can be neither made nor opened for want of
// rights, the error is the refused creation's (fs.ErrPermission or EROFS).
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(LockFile(path), os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		var rerr error
		if f, rerr = os.Open(LockFile(path)); rerr == nil {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", LockFile(path), err)
	}
	return f, nil
}

// holders names the processes that hold a lock on the open file f (only
// its exclusive lock when exclusive is set), as /proc/locks lists them
// ("process 123 (cks), process 456 (cks)"), or "another process" when it
// cannot tell.
func holders(f *os.File, exclusive bool) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return "another process"
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return "another process"
	}
	defer locks.Close()
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	file := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	var who []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  READ  1234 00:2d:5678 0 EOF"; a waiter's
		// line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != file || exclusive && fields[3] != "WRITE" {
			continue
		}
		pid := fields[4]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		name := "process " + pid
		if comm, err := os.ReadFile("/proc/" + pid + "/comm"); err == nil {
			name += " (" + strings.TrimSpace(string(comm)) + ")"
		}
		who = append(who, name)
	}
	if len(who) == 0 {
		return "another process"
	}
	return strings.Join(who, ", ")
}

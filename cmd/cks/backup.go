package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/driver/sqlite"
)

// pgDumpHint is what cks backup and restore say of a Postgres database.
const pgDumpHint = "a Postgres database is backed up with pg_dump (pg_dump --format=custom --file FILE URL) and " +
	"restored with pg_restore (docs/operations.md)"

// cmdBackup is `cks backup FILE`: an online copy of the SQLite database,
// safe while the hub and its agents write it (sqlite.Backup), with its
// progress on stderr.
func cmdBackup(ctx context.Context, args []string, e env) error {
	sf, dst, asJSON, err := fileArgs("backup", "the FILE to write", args, e)
	if err != nil {
		return err
	}
	_, src, err := sqliteFile(sf, e, "backup")
	if err != nil {
		return err
	}
	begin := time.Now()
	err = sqlite.Backup(ctx, src, dst, sqlite.BackupOptions{Progress: func(p sqlite.BackupProgress) {
		fmt.Fprintf(e.stderr, "\rcopied %d of %d pages (%d%%)", p.Copied, p.Total, 100*p.Copied/max(p.Total, 1))
	}})
	fmt.Fprintln(e.stderr)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists; a backup never overwrites a file", errUsage, dst)
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return err
	}
	res := struct {
		Database string  `json:"database"`
		Backup   string  `json:"backup"`
		Bytes    int64   `json:"bytes"`
		Seconds  float64 `json:"seconds"`
	}{src, dst, fi.Size(), time.Since(begin).Seconds()}
	if asJSON {
		return printJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s: %d bytes in %.1fs (restore it with: cks restore %s)\n",
		res.Database, res.Backup, res.Bytes, res.Seconds, res.Backup)
	return nil
}

// cmdRestore is `cks restore FILE`: the data directory's database replaced
// by a backup. It refuses while a hub serves from the directory (its lock)
// and while any process has the database open — a hub or agent of another
// directory with --database, an MCP server, a CLI reading it — by the
// database's exclusive lock (sqlite.LockExclusive), which every Driver of
// it holds shared; both are held until the restore is done, so none opens
// it meanwhile. The backup is checked and opened (brought to the current
// schema) as a copy before anything is replaced, and the database it
// replaces is kept, as an online copy, beside it.
func cmdRestore(ctx context.Context, args []string, e env) error {
	sf, from, asJSON, err := fileArgs("restore", "the backup FILE", args, e)
	if err != nil {
		return err
	}
	dir, target, err := sqliteFile(sf, e, "restore")
	if errors.Is(err, os.ErrNotExist) {
		err = nil // nothing to replace: a restore onto a new machine
	}
	if err != nil {
		return err
	}
	if err := sqlite.QuickCheck(ctx, from); err != nil {
		return fmt.Errorf("%s is not a sound SQLite database: %w", from, err)
	}
	lock, err := dir.Lock()
	if errors.Is(err, datadir.ErrLocked) {
		return fmt.Errorf("a hub serves from %s: stop it (and its agents) before a restore: %w", dir, err)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := os.MkdirAll(filepath.Dir(target), datadir.DirMode); err != nil {
		return err
	}
	dbLock, err := sqlite.LockExclusive(target)
	if errors.Is(err, sqlite.ErrInUse) {
		return fmt.Errorf("%w: stop every hub, agent and MCP server of the database before a restore", err)
	}
	if err != nil {
		return err
	}
	defer dbLock.Unlock()
	kept, err := replaceDatabase(ctx, target, from)
	if err != nil {
		return err
	}
	res := struct {
		Database string `json:"database"`
		From     string `json:"from"`
		Kept     string `json:"kept,omitempty"`
	}{target, from, kept}
	if asJSON {
		return printJSON(e.stdout, res)
	}
	fmt.Fprintf(e.stdout, "restored %s from %s\n", target, from)
	if kept != "" {
		fmt.Fprintf(e.stdout, "the database it replaced is kept as %s\n", kept)
	}
	return nil
}

// fileArgs parses the command line of backup and restore: the store's
// flags, --json and one argument, a file (what says which).
func fileArgs(name, what string, args []string, e env) (sf storeFlags, file string, asJSON bool, err error) {
	fs := flagSet(name, e)
	sf.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return sf, "", false, err
	}
	if len(pos) != 1 {
		return sf, "", false, fmt.Errorf("%w: %s takes one argument, %s, got %q", errUsage, name, what, pos)
	}
	return sf, pos[0], asJSON, nil
}

// sqliteFile resolves the command's database and returns its SQLite file,
// refusing a Postgres URL (what to use instead) and naming a missing file
// with os.ErrNotExist in the chain.
func sqliteFile(sf storeFlags, e env, what string) (datadir.Dir, string, error) {
	dir, url := sf.resolve(e)
	dialect, path, err := backend.ParseURL(url)
	if err != nil {
		return dir, "", err
	}
	if dialect != "sqlite" {
		return dir, "", fmt.Errorf("%w: cks %s works on the SQLite file; %s", errUsage, what, pgDumpHint)
	}
	if _, err := os.Stat(path); err != nil {
		return dir, path, fmt.Errorf("no database at %s (give --data-dir or --database): %w", path, err)
	}
	return dir, path, nil
}

// replaceDatabase puts a copy of the backup at from in target's place and
// returns where the database it replaced is kept ("" when there was none).
// The caller holds target's exclusive lock: no process has it open. The
// copy is opened by the backend before it replaces anything, so a backup
// of an older cks is upgraded, and one it cannot open replaces nothing;
// the processes its rows say are alive are recorded exited (none of them
// runs: none has the database open), so they neither read alive nor
// block the next restore. The copy and the kept database are single
// files, and nothing is left beside them.
func replaceDatabase(ctx context.Context, target, from string) (string, error) {
	staged := target + ".restoring"
	if err := removeStaged(staged); err != nil { // a restore that was cut short
		return "", err
	}
	if err := sqlite.Backup(ctx, from, staged, sqlite.BackupOptions{}); err != nil {
		return "", err
	}
	defer removeStaged(staged) //nolint:errcheck // a leftover is removed by the next restore
	if err := settle(ctx, staged, from); err != nil {
		return "", err
	}
	kept := ""
	if _, err := os.Stat(target); err == nil {
		kept = fmt.Sprintf("%s.before-restore-%s", target, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := sqlite.Backup(ctx, target, kept, sqlite.BackupOptions{}); err != nil {
			return "", fmt.Errorf("keeping the database a restore replaces: %w", err)
		}
	}
	if err := removeDatabase(target); err != nil {
		return "", err
	}
	// Copied, not renamed: the staged copy's last writes may sit in its WAL.
	if err := sqlite.Backup(ctx, staged, target, sqlite.BackupOptions{}); err != nil {
		return "", fmt.Errorf("%w (the replaced database is kept as %s)", err, kept)
	}
	return kept, nil
}

// settle opens the staged copy of the backup at from through the backend
// (which brings it to the current schema) and records its alive processes
// exited.
func settle(ctx context.Context, staged, from string) error {
	st, err := backend.Open(ctx, "sqlite:"+staged)
	if err != nil {
		return fmt.Errorf("cks cannot open the backup %s: %w", from, err)
	}
	_, err = st.Liveness.RecordAllExited(ctx)
	return errors.Join(err, st.Close())
}

// removeDatabase removes a SQLite database file with its WAL and shared
// memory files. Its lock file stays (sqlite.LockFile says why).
func removeDatabase(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// removeStaged removes the staged copy of a restore, lock file and all: it
// is the restore's alone.
func removeStaged(path string) error {
	err := os.Remove(sqlite.LockFile(path))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(removeDatabase(path), err)
}

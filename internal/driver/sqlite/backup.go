package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"

	"modernc.org/sqlite"
)

// BackupPages is how many pages one step of Backup copies between two
// reports of its progress, unless BackupOptions says otherwise.
const BackupPages = 1024

// BackupOptions tunes Backup.
type BackupOptions struct {
	// Pages is how many pages a step copies (default BackupPages).
	Pages int
	// Progress, if set, is called after every step.
	Progress func(BackupProgress)
}

// BackupProgress is what Backup reports after every step: pages copied of
// the total.
type BackupProgress struct {
	Copied, Total int
}

// Backup copies the database file src into dst, a new file (mode 0600), with
// SQLite's online backup API, while hubs and agents go on writing src: the
// copy is of one read transaction's snapshot (WAL mode: no writer waits
// for it, and no write made during the copy restarts it), written to
// dst.partial and renamed to dst once complete and checked (quick_check),
// so dst is never a torn copy. The copy is one file: switched to SQLite's
// rollback journal, it has no -wal or -shm file beside it, and none is
// left (a Driver that opens it switches it back to WAL). An existing dst
// is refused; the database at src is only read.
func Backup(ctx context.Context, src, dst string, opts BackupOptions) error {
	if opts.Pages <= 0 {
		opts.Pages = BackupPages
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("sqlite: backup to %s: %w", dst, os.ErrExist)
	}
	partial := dst + ".partial"
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", dst, err)
	}
	f.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(partial)
		}
	}()
	if err := copyDatabase(ctx, src, partial, opts); err != nil {
		return fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	if err := rollbackJournal(ctx, partial); err != nil {
		return fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	if err := QuickCheck(ctx, partial); err != nil {
		return fmt.Errorf("sqlite: backup of %s: the copy fails its check: %w", src, err)
	}
	if err := os.Rename(partial, dst); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", dst, err)
	}
	ok = true
	return nil
}

func copyDatabase(ctx context.Context, src, dst string, opts BackupOptions) error {
	db, err := sql.Open("sqlite", dsn(src, url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds())}}))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The read transaction is the snapshot the steps copy.
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck // read only
	if _, err := conn.ExecContext(ctx, "SELECT count(*) FROM sqlite_schema"); err != nil {
		return err
	}
	return conn.Raw(func(dc any) error {
		c, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("driver connection %T has no backup", dc)
		}
		b, err := c.NewBackup(dst)
		if err != nil {
			return err
		}
		for {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, b.Finish())
			}
			more, err := b.Step(int32(opts.Pages))
			if err != nil {
				return errors.Join(err, b.Finish())
			}
			if opts.Progress != nil {
				total := b.PageCount()
				opts.Progress(BackupProgress{Copied: total - b.Remaining(), Total: total})
			}
			if !more {
				return b.Finish()
			}
		}
	})
}

// rollbackJournal switches the database at path, which no other
// connection has open, to the rollback journal (journal_mode DELETE): the
// WAL mode its header took from the source would have SQLite make -wal
// and -shm files beside it whenever it is opened, and a read-only open
// leaves them.
func rollbackJournal(ctx context.Context, path string) error {
	mode, err := pragma(ctx, path, url.Values{}, "PRAGMA journal_mode=DELETE")
	if err == nil && mode != "delete" {
		err = fmt.Errorf("journal mode of %s is %s, want delete", path, mode)
	}
	return err
}

// QuickCheck runs PRAGMA quick_check on the database file at path, read
// only: nil when SQLite finds it sound. A file with no -wal beside it is
// read as immutable (nothing can sit in a WAL that is not there), so that
// the check of a WAL-mode file leaves no -wal or -shm file behind.
func QuickCheck(ctx context.Context, path string) error {
	params := url.Values{"mode": {"ro"}}
	if _, err := os.Stat(path + "-wal"); errors.Is(err, os.ErrNotExist) {
		params.Set("immutable", "1")
	}
	res, err := pragma(ctx, path, params, "PRAGMA quick_check")
	if err == nil && res != "ok" {
		err = errors.New(res)
	}
	return err
}

// pragma runs statement q, a PRAGMA of one value, on a connection of its
// own to the database file at path (opened with params), and returns the
// value.
func pragma(ctx context.Context, path string, params url.Values, q string) (string, error) {
	db, err := sql.Open("sqlite", dsn(path, params))
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRowContext(ctx, q).Scan(&v)
	return v, err
}

package sqlite

import (
	"context"
	"strconv"
)

// CapPages caps the database file at n pages for d's writer connection
// (PRAGMA max_page_count), so that writes beyond it fail as on a full disk.
func CapPages(ctx context.Context, d *Driver, n int) error {
	return d.write(ctx, func(w *wtx) error {
		_, err := w.Tx.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(n))
		return err
	})
}

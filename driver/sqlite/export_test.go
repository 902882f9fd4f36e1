package sqlite

import (
	"context"
	"fmt"
)

// CapPages caps the database file of d at n pages (PRAGMA max_page_count on
// its writer connection), so that a test meets a full disk.
func CapPages(ctx context.Context, d *Driver, n int) error {
	_, err := d.writer.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n))
	return err
}

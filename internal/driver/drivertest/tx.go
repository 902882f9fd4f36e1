package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cks-dev/cks/internal/driver"
)

// Tx checks WithTx: commit, rollback, read-only snapshots, and writers of
// several handles on one database.
func Tx(t *testing.T, newDB NewDB) {
	t.Run("CommitAndRollback", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ctx := Ctx(t)
		boom := errors.New("boom")
		err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if err := ErrOnly(ex.LivenessUpsert(ctx, row("gone", "agent", 0))); err != nil {
				return err
			}
			// The transaction sees its own write.
			if _, err := ex.LivenessGet(ctx, "gone"); err != nil {
				return fmt.Errorf("own write: %w", err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("WithTx = %v, want fn's error", err)
		}
		_, err = d.Executor().LivenessGet(ctx, "gone")
		isNoRows(t, "row of a rolled-back transaction", err)
		must(t, "commit", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			return ErrOnly(ex.LivenessUpsert(ctx, row("kept", "agent", 0)))
		}))
		must(t, "row of a committed transaction", ErrOnly(d.Executor().LivenessGet(ctx, "kept")))
	})
	t.Run("ReadOnlySnapshot", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ctx := Ctx(t)
		must(t, "upsert", ErrOnly(d.Executor().LivenessUpsert(ctx, row("a", "agent", 0))))
		err := d.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
			before, err := ex.LivenessGet(ctx, "a")
			if err != nil {
				return err
			}
			// A write committed meanwhile, outside the transaction.
			changed := row("a", "other", 0)
			changed.PID = 9
			if err := ErrOnly(d.Executor().LivenessUpsert(ctx, changed)); err != nil {
				return err
			}
			if err := ErrOnly(d.Executor().LivenessUpsert(ctx, row("b", "agent", 0))); err != nil {
				return err
			}
			after, err := ex.LivenessGet(ctx, "a")
			if err != nil {
				return err
			}
			all, err := ex.LivenessList(ctx)
			if err != nil {
				return err
			}
			if after != before || len(all) != 1 {
				return fmt.Errorf("the snapshot moved: %+v then %+v, %d rows", before, after, len(all))
			}
			return nil
		})
		must(t, "read-only transaction", err)
		if got, _ := d.Executor().LivenessGet(ctx, "a"); got.PID != 9 {
			t.Fatalf("after the snapshot the write reads %+v", got)
		}
	})
	t.Run("WriteInReadOnlyRefused", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ctx := Ctx(t)
		err := d.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
			return ErrOnly(ex.LivenessUpsert(ctx, row("a", "agent", 0)))
		})
		if err == nil {
			t.Fatal("a write in a read-only transaction succeeded")
		}
		_, err = d.Executor().LivenessGet(ctx, "a")
		isNoRows(t, "row written in a read-only transaction", err)
	})
	t.Run("WritersOfSeveralHandles", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		handles := []driver.Driver{db.Open(t), db.Open(t), db.Open(t)}
		ctx := Ctx(t)
		const each = 15
		var wg sync.WaitGroup
		errs := make(chan error, len(handles)*each)
		for h, d := range handles {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("h%d-%02d", h, i)
					errs <- d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
						if err := ErrOnly(ex.LivenessUpsert(ctx, row(id, "agent", i))); err != nil {
							return err
						}
						_, err := ex.LivenessSetDesiredState(ctx, id, "stop_requested")
						return err
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, "concurrent write", err)
		}
		all, err := handles[0].Executor().LivenessList(ctx)
		must(t, "list", err)
		if len(all) != len(handles)*each {
			t.Fatalf("%d rows after %d writes", len(all), len(handles)*each)
		}
	})
}

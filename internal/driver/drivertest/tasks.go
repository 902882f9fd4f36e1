package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/waitfor"
)

// The suite's states are plain strings: the driver knows none of them, it
// only filters by what it is given.
const (
	stOpen    = "OPEN"
	stWaiting = "WAITING"
	stClaimed = "CLAIMED"
	stRunning = "RUNNING"
	stDone    = "COMPLETED"
	stFailed  = "FAILED"
	stParked  = "NEEDS_INPUT"
	stHeld    = "STOPPED"
)

var terminal = []string{stDone, stFailed, "CANCELLED"}

// sec is T0 plus s seconds.
func sec(s int) time.Time { return T0.Add(time.Duration(s) * time.Second) }

// task is a minimal row: every NOT NULL column set, the nullable ones NULL.
func task(typ, state string) driver.TaskRow {
	return driver.TaskRow{Type: typ, State: state, MaxAttempts: 3, Revision: 1,
		Payload: []byte(`{}`), Metadata: []byte(`{}`), CreatedAt: T0, UpdatedAt: T0, StateChangedAt: T0}
}

// fullTask has every column set to something other than its default.
func fullTask(parent int64) driver.TaskRow {
	return driver.TaskRow{
		Type: "build", Title: "title ü", Description: "desc", AcceptanceCriteria: "ac",
		Payload: []byte(`{"a": [1, 2]}`), State: stRunning, Priority: 7, Attempts: 2, MaxAttempts: 5,
		Restarts: 1, Revision: 3, ParentID: parent, DedupeKey: "key-1", CreatedBy: "alice",
		ClaimedBy: "w1", ClaimedAt: sec(1), LeaseTokenHash: "hash-1", LeaseExpiresAt: sec(61),
		LeaseRenewedAt: sec(2), LeaseMs: 60000, RunAfter: sec(3), Result: "r", LastError: "e",
		Question: "q", Answer: "a", ReviewNote: "n", CreatedAt: T0, UpdatedAt: sec(4),
		StateChangedAt: sec(5), Metadata: []byte(`{"owner": "x"}`), AttemptTimeoutMs: 600000, ExpiresAt: sec(6),
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
}

// insert inserts rows and returns their ids, checking that the rows come
// back as written, with ids, in input order.
func insert(t testing.TB, ex driver.Executor, rows ...driver.TaskRow) []int64 {
	t.Helper()
	stored, err := ex.TaskInsertMany(Ctx(t), rows)
	skipUnsupported(t, "task insert", err)
	if len(stored) != len(rows) {
		t.Fatalf("task insert returned %d rows for %d", len(stored), len(rows))
	}
	out := make([]int64, len(stored))
	for i, r := range stored {
		if r.ID == 0 || (i > 0 && r.ID <= out[i-1]) {
			t.Fatalf("task insert returned ids %v…: want new ids, ascending in input order", ids(stored))
		}
		want := rows[i]
		want.ID = r.ID
		sameTask(t, r, want)
		out[i] = r.ID
	}
	return out
}

// leases are claim leases to by, one per hash, each of 60 s expiring at
// second 120.
func leases(by string, hashes ...string) []driver.TaskClaimLease {
	out := make([]driver.TaskClaimLease, len(hashes))
	for i, h := range hashes {
		out[i] = driver.TaskClaimLease{TokenHash: h, ClaimedBy: by, ExpiresAt: sec(120), Ms: 60000}
	}
	return out
}

// claimedIDs are the ids of claimed rows, in order.
func claimedIDs(rows []driver.TaskClaimed) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// get reads one task.
func get(t testing.TB, ex driver.Executor, id int64) driver.TaskRow {
	t.Helper()
	rows, err := ex.TaskGetMany(Ctx(t), driver.TaskGetManyParams{IDs: []int64{id}})
	must(t, "task get", err)
	if len(rows) != 1 {
		t.Fatalf("task %d: %d rows", id, len(rows))
	}
	return rows[0]
}

// ids returns the ids of rows, in order.
func ids(rows []driver.TaskRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// sameTask fails the test unless got equals want in every column (JSON
// compared as documents: Postgres normalises jsonb).
func sameTask(t testing.TB, got, want driver.TaskRow) {
	t.Helper()
	if !jsonSame(got.Payload, want.Payload) || !jsonSame(got.Metadata, want.Metadata) {
		t.Fatalf("task %d JSON: payload %s metadata %s, want %s %s", want.ID, got.Payload, got.Metadata, want.Payload, want.Metadata)
	}
	got.Payload, got.Metadata, want.Payload, want.Metadata = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("task reads\n %+v\nwant\n %+v", got, want)
	}
}

func jsonSame(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// Tasks checks the task ledger's primitives.
func Tasks(t *testing.T, newDB NewDB) {
	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		parent := insert(t, ex, task("plan", stOpen))[0]
		full, bare := fullTask(parent), task("x", stOpen)
		bare.StateChangedAt = time.Time{} // nullable: NULL reads as zero
		got := insert(t, ex, full, bare, task("y", stOpen))
		if !slices.IsSorted(got) || got[0] <= parent {
			t.Fatalf("ids %v (after %d): want ascending, in input order", got, parent)
		}
		full.ID, bare.ID = got[0], got[1]
		sameTask(t, get(t, ex, full.ID), full)
		sameTask(t, get(t, ex, bare.ID), bare)
		// By id, whatever the order asked; unknown ids absent; every lock.
		for _, lock := range []driver.Lock{driver.LockNone, driver.LockUpdate, driver.LockUpdateSkip, driver.LockShare} {
			var rows []driver.TaskRow
			err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				var err error
				rows, err = ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{got[2], 999, got[0], parent}, Lock: lock})
				return err
			})
			must(t, "get many", err)
			if want := []int64{parent, got[0], got[2]}; !slices.Equal(ids(rows), want) {
				t.Fatalf("lock %d: ids %v, want %v", lock, ids(rows), want)
			}
		}
		if rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{}); err != nil || len(rows) != 0 {
			t.Fatalf("get of no ids = %v, %v", rows, err)
		}
		if rows, err := ex.TaskInsertMany(ctx, nil); err != nil || len(rows) != 0 {
			t.Fatalf("insert of nothing = %v, %v", rows, err)
		}
		// A second live task of one dedupe key.
		dup := task("x", stOpen)
		dup.DedupeKey = "key-1"
		_, err := ex.TaskInsertMany(ctx, []driver.TaskRow{dup})
		if !errors.Is(err, driver.ErrUniqueViolation) {
			t.Fatalf("second live task of a dedupe key: err = %v, want ErrUniqueViolation", err)
		}
	})
	// What an insert returns is what a read returns, byte for byte (the
	// JSON columns in the database's stored form): for a batch of new tasks
	// as an enqueue makes them (a driver may send those narrowly) and for
	// one with a row that is not new.
	t.Run("InsertReturnsAsStored", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		parent := insert(t, ex, task("plan", stOpen))[0]
		fresh := func(i int) driver.TaskRow {
			r := task("build", stOpen)
			r.Title, r.Description, r.AcceptanceCriteria = fmt.Sprintf("t%d ü", i), "d", "ac"
			r.Payload, r.Metadata = []byte(`{"b":  1, "a": [1, 2]}`), []byte(` {"owner":"x"} `)
			r.Priority, r.MaxAttempts, r.CreatedBy, r.DedupeKey = i, 5, "alice", fmt.Sprintf("k%d", i)
			if i%2 == 0 {
				r.ParentID = parent
			}
			if i == 3 {
				r.State = "WAITING"
			}
			return r
		}
		for _, batch := range [][]driver.TaskRow{
			{fresh(1), fresh(2), fresh(3)},
			{fresh(4), fullTask(parent), fresh(5)},
		} {
			stored, err := ex.TaskInsertMany(ctx, batch)
			must(t, "insert", err)
			var want []int64
			for _, r := range stored {
				want = append(want, r.ID)
			}
			read, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: want})
			must(t, "get many", err)
			if !reflect.DeepEqual(stored, read) {
				t.Fatalf("insert returned\n %+v\nread back\n %+v", stored, read)
			}
		}
	})
	t.Run("UpdateMany", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		p := insert(t, ex, task("plan", stOpen))[0]
		got := insert(t, ex, fullTask(p), task("x", stOpen), task("y", stOpen))
		// Every writable column of the full row back to its zero, and the
		// bare row to full; type, created_at and created_by stay.
		cleared := task("ignored", stOpen)
		cleared.ID, cleared.CreatedAt, cleared.CreatedBy = got[0], sec(100), "mallory"
		cleared.StateChangedAt, cleared.UpdatedAt = time.Time{}, sec(9)
		filled := fullTask(p)
		filled.ID, filled.Type, filled.DedupeKey = got[1], "ignored", "key-2"
		n, err := ex.TaskUpdateMany(ctx, []driver.TaskRow{cleared, filled, {ID: 999, Type: "x", State: stOpen,
			CreatedAt: T0, UpdatedAt: T0}})
		skipUnsupported(t, "update many", err)
		if n != 2 {
			t.Fatalf("update wrote %d rows, want 2 (999 does not exist)", n)
		}
		wantCleared := cleared
		wantCleared.Type, wantCleared.CreatedAt, wantCleared.CreatedBy = "build", T0, "alice"
		sameTask(t, get(t, ex, got[0]), wantCleared)
		wantFilled := filled
		wantFilled.Type, wantFilled.CreatedBy = "x", ""
		sameTask(t, get(t, ex, got[1]), wantFilled)
		untouched := task("y", stOpen)
		untouched.ID = got[2]
		sameTask(t, get(t, ex, got[2]), untouched)
		if n, err := ex.TaskUpdateMany(ctx, nil); err != nil || n != 0 {
			t.Fatalf("update of nothing = %d, %v", n, err)
		}
		// Inside a transaction, and rolled back with it.
		boom := errors.New("boom")
		err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			r := get(t, ex, got[2])
			r.Title = "in tx"
			if _, err := ex.TaskUpdateMany(ctx, []driver.TaskRow{r}); err != nil {
				return err
			}
			if get(t, ex, got[2]).Title != "in tx" {
				return errors.New("the transaction does not see its own update")
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		sameTask(t, get(t, ex, got[2]), untouched)
	})
	t.Run("MoveMany", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		p := insert(t, ex, task("plan", stOpen))[0]
		got := insert(t, ex, fullTask(p), task("x", stClaimed), task("y", stOpen))
		full, bare := get(t, ex, got[0]), get(t, ex, got[1])
		// The full row's move columns back to zero (NULL times), the bare
		// row's filled; every other column of the rows sent is changed too,
		// and must not be written.
		cleared := full
		cleared.State, cleared.Attempts, cleared.Restarts, cleared.ClaimedBy = stDone, 0, 0, ""
		cleared.ClaimedAt, cleared.LeaseTokenHash, cleared.LeaseExpiresAt = time.Time{}, "", time.Time{}
		cleared.LeaseRenewedAt, cleared.LeaseMs, cleared.RunAfter = time.Time{}, 0, time.Time{}
		cleared.Result, cleared.LastError, cleared.Question, cleared.Answer, cleared.ReviewNote = "", "", "", "", ""
		cleared.UpdatedAt, cleared.StateChangedAt = sec(9), time.Time{}
		filled := bare
		filled.State, filled.Attempts, filled.Restarts, filled.ClaimedBy = stRunning, 2, 1, "w2"
		filled.ClaimedAt, filled.LeaseTokenHash, filled.LeaseExpiresAt = sec(10), "hash-2", sec(70)
		filled.LeaseRenewedAt, filled.LeaseMs, filled.RunAfter = sec(11), 60000, sec(12)
		filled.Result, filled.LastError, filled.Question, filled.Answer, filled.ReviewNote = "r", "e", "q", "a", "n"
		filled.UpdatedAt, filled.StateChangedAt = sec(13), sec(14)
		sent := []driver.TaskRow{cleared, filled, {ID: 999, State: stOpen, UpdatedAt: T0}}
		for i := range sent[:2] {
			r := &sent[i]
			r.Type, r.Title, r.Description, r.AcceptanceCriteria = "other", "other", "other", "other"
			r.Payload, r.Metadata = []byte(`{"other": 1}`), []byte(`{"other": 2}`)
			r.Priority, r.MaxAttempts, r.Revision, r.ParentID = 99, 99, 99, got[2]
			r.DedupeKey, r.CreatedBy, r.CreatedAt = "other", "other", sec(99)
			r.AttemptTimeoutMs, r.ExpiresAt = 99, sec(99)
		}
		evs := []driver.TaskEventRow{
			{TaskID: got[0], At: sec(9), Actor: "w1", FromState: stRunning, ToState: stDone, Attempt: 2, Reason: "done"},
			{TaskID: got[1], At: sec(13), Actor: "w2", FromState: stClaimed, ToState: stRunning, Attempt: 2},
			{TaskID: got[1], At: sec(13), Actor: "w2", FromState: stRunning, ToState: stRunning, Attempt: 2, Reason: "again"},
		}
		n, err := ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: sent, Events: evs})
		skipUnsupported(t, "move many", err)
		if n != 2 {
			t.Fatalf("move wrote %d rows, want 2 (999 does not exist)", n)
		}
		sameTask(t, get(t, ex, got[0]), cleared)
		sameTask(t, get(t, ex, got[1]), filled)
		untouched := get(t, ex, got[2])
		if untouched.State != stOpen || untouched.Title != "" {
			t.Fatalf("a task no move names changed: %+v", untouched)
		}
		for k, id := range got[:2] {
			list, err := ex.TaskEventList(ctx, id)
			must(t, "event list", err)
			want := evs[:1]
			if k == 1 {
				want = evs[1:]
			}
			if len(list) != len(want) {
				t.Fatalf("events of task %d = %+v, want %+v", id, list, want)
			}
			for i := range want {
				w := want[i]
				w.EventID = list[i].EventID
				if list[i] != w || (i > 0 && list[i].EventID <= list[i-1].EventID) {
					t.Errorf("event %d of task %d = %+v, want %+v (ids ascending)", i, id, list[i], w)
				}
			}
		}
		// One row with one event (a dialect may have a form of its own for
		// it): the filled row's move columns back to zero, its others
		// changed in vain.
		one := sent[0]
		one.ID = got[1]
		oneEv := driver.TaskEventRow{TaskID: got[1], At: sec(15), Actor: "w2", FromState: stRunning, ToState: stDone, Attempt: 0,
			Reason: "one"}
		n, err = ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: []driver.TaskRow{one}, Events: []driver.TaskEventRow{oneEv}})
		if err != nil || n != 1 {
			t.Fatalf("move of one row = %d, %v", n, err)
		}
		wantOne := cleared
		wantOne.ID, wantOne.Type, wantOne.Title, wantOne.Description = bare.ID, bare.Type, bare.Title, bare.Description
		wantOne.AcceptanceCriteria, wantOne.Payload, wantOne.Metadata = bare.AcceptanceCriteria, bare.Payload, bare.Metadata
		wantOne.Priority, wantOne.MaxAttempts, wantOne.Revision, wantOne.ParentID = bare.Priority, bare.MaxAttempts, bare.Revision, bare.ParentID
		wantOne.DedupeKey, wantOne.CreatedBy, wantOne.CreatedAt = bare.DedupeKey, bare.CreatedBy, bare.CreatedAt
		wantOne.AttemptTimeoutMs, wantOne.ExpiresAt, wantOne.Traceparent = bare.AttemptTimeoutMs, bare.ExpiresAt, bare.Traceparent
		sameTask(t, get(t, ex, got[1]), wantOne)
		if list, err := ex.TaskEventList(ctx, got[1]); err != nil || len(list) != 3 || list[2].Reason != "one" ||
			!list[2].At.Equal(sec(15)) {
			t.Fatalf("events of task %d after a one-row move = %+v, %v", got[1], list, err)
		}
		if n, err := ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{}); err != nil || n != 0 {
			t.Fatalf("move of nothing = %d, %v", n, err)
		}
		// An event with changes is not a move's: refused, nothing written.
		withChanges := oneEv
		withChanges.Changes = `[]`
		if n, err := ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: []driver.TaskRow{one},
			Events: []driver.TaskEventRow{withChanges}}); err == nil || n != 0 {
			t.Fatalf("move with an event with changes = %d, %v; want refused", n, err)
		}
		// Inside a transaction, and rolled back with it: rows and events.
		boom := errors.New("boom")
		err = d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			r := get(t, ex, got[2])
			r.State = stClaimed
			n, err := ex.TaskMoveMany(ctx, driver.TaskMoveManyParams{Rows: []driver.TaskRow{r},
				Events: []driver.TaskEventRow{{TaskID: r.ID, At: sec(20), FromState: stOpen, ToState: stClaimed}}})
			if err != nil || n != 1 {
				return fmt.Errorf("move in tx = %d, %w", n, err)
			}
			if get(t, ex, got[2]).State != stClaimed {
				return errors.New("the transaction does not see its own move")
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		sameTask(t, get(t, ex, got[2]), untouched)
		if list, err := ex.TaskEventList(ctx, got[2]); err != nil || len(list) != 0 {
			t.Fatalf("events of a rolled back move = %+v, %v", list, err)
		}
	})
	t.Run("Claimable", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(typ string, prio, created int, runAfter time.Time) driver.TaskRow {
			r := task(typ, stOpen)
			r.Priority, r.CreatedAt, r.RunAfter = prio, sec(created), runAfter
			return r
		}
		got := insert(t, ex,
			mk("a", 1, 0, time.Time{}),  // 0
			mk("b", 5, 9, time.Time{}),  // 1: highest priority
			mk("a", 1, -1, time.Time{}), // 2: older than 0
			mk("a", 1, -1, time.Time{}), // 3: same as 2, later id
			mk("b", 9, 0, sec(61)),      // 4: held back until 61
			mk("c", 3, 0, sec(60)),      // 5: due at 60 exactly
		)
		other := task("a", stRunning)
		other.Priority = 100
		insert(t, ex, other, task("a", stParked))
		claim := func(types []string, limit int, now time.Time, excluded ...string) []int64 {
			t.Helper()
			rows, err := ex.TaskClaimable(ctx, driver.TaskClaimableParams{State: stOpen, Excluded: excluded,
				Types: types, Now: now, Limit: limit})
			skipUnsupported(t, "claimable", err)
			return ids(rows)
		}
		at60 := sec(60)
		for _, c := range []struct {
			types []string
			limit int
			want  []int64
		}{
			{nil, 10, []int64{got[1], got[5], got[2], got[3], got[0]}},
			{nil, 2, []int64{got[1], got[5]}},
			{[]string{"a"}, 10, []int64{got[2], got[3], got[0]}},
			{[]string{"a"}, 1, []int64{got[2]}},
			{[]string{"a", "c"}, 10, []int64{got[5], got[2], got[3], got[0]}},
			{[]string{"nope"}, 10, nil},
		} {
			if g := claim(c.types, c.limit, at60); !slices.Equal(g, c.want) {
				t.Errorf("claimable %v limit %d = %v, want %v", c.types, c.limit, g, c.want)
			}
		}
		if g := claim(nil, 10, sec(61)); len(g) != 6 || g[0] != got[4] {
			t.Errorf("claimable at 61 = %v, want 4 due first", g)
		}
		// The excluded set applies even to the state asked for.
		if g := claim(nil, 10, at60, stParked, stOpen); len(g) != 0 {
			t.Errorf("claimable with OPEN excluded = %v, want none", g)
		}
		if d.Dialect() != "postgres" {
			return
		}
		// SKIP LOCKED: a row another transaction holds is passed over.
		held := make(chan struct{})
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				if _, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{got[1]}, Lock: driver.LockUpdate}); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		g := claim(nil, 1, at60)
		close(release)
		must(t, "holder", <-done)
		if !slices.Equal(g, []int64{got[5]}) {
			t.Fatalf("claimable while %d is held = %v, want [%d]", got[1], g, got[5])
		}
	})
	t.Run("PausedTypes", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		got := insert(t, ex, task("a", stOpen), task("b", stOpen), task("a", stOpen))
		pause := func(typ, by string) bool {
			t.Helper()
			ok, err := ex.TypePause(ctx, driver.PausedTypeRow{Type: typ, PausedBy: by, Reason: "provider down", PausedAt: sec(1)})
			must(t, "pause", err)
			return ok
		}
		if !pause("a", "ops") || pause("a", "someone else") {
			t.Fatal("pausing a twice: want the first to record and the second to find it paused")
		}
		r, err := ex.TypePausedGet(ctx, "a")
		must(t, "paused get", err)
		if want := (driver.PausedTypeRow{Type: "a", PausedBy: "ops", Reason: "provider down", PausedAt: sec(1)}); !r.PausedAt.Equal(want.PausedAt) ||
			r.Type != want.Type || r.PausedBy != want.PausedBy || r.Reason != want.Reason {
			t.Fatalf("paused get = %+v, want %+v (the first pause kept)", r, want)
		}
		if _, err := ex.TypePausedGet(ctx, "b"); !errors.Is(err, driver.ErrNoRows) {
			t.Fatalf("paused get of b = %v, want ErrNoRows", err)
		}
		pause("0-first", "ops")
		list, err := ex.TypePausedList(ctx)
		must(t, "paused list", err)
		if len(list) != 2 || list[0].Type != "0-first" || list[1].Type != "a" {
			t.Fatalf("paused list = %+v, want 0-first then a", list)
		}
		// Both claim forms pass over a paused type's tasks, whichever
		// types they ask for.
		for _, types := range [][]string{nil, {"a"}, {"a", "b"}} {
			rows, err := ex.TaskClaimable(ctx, driver.TaskClaimableParams{State: stOpen, Types: types, Now: sec(2), Limit: 10})
			skipUnsupported(t, "claimable", err)
			wantB := len(types) == 0 || slices.Contains(types, "b")
			if g := ids(rows); slices.Contains(g, got[0]) || slices.Contains(g, got[2]) || slices.Contains(g, got[1]) != wantB {
				t.Errorf("claimable %v with a paused = %v, want no task of a (and b's: %v)", types, g, wantB)
			}
		}
		claimed, err := ex.TaskClaim(ctx, driver.TaskClaimParams{
			TaskClaimableParams: driver.TaskClaimableParams{State: stOpen, Now: sec(2), Limit: 3},
			Leases:              leases("w", "h1", "h2", "h3"), To: stClaimed, AttemptsAdded: 1})
		skipUnsupported(t, "claim", err)
		if g := claimedIDs(claimed); !slices.Equal(g, []int64{got[1]}) {
			t.Fatalf("claim with a paused = %v, want only b's task %d", g, got[1])
		}
		for i, want := range []bool{true, false} {
			ok, err := ex.TypeResume(ctx, "a")
			must(t, "resume", err)
			if ok != want {
				t.Fatalf("resume a (%d) = %v, want %v", i+1, ok, want)
			}
		}
		claimed, err = ex.TaskClaim(ctx, driver.TaskClaimParams{
			TaskClaimableParams: driver.TaskClaimableParams{State: stOpen, Types: []string{"a"}, Now: sec(3), Limit: 2},
			Leases:              leases("w", "h4", "h5"), To: stClaimed, AttemptsAdded: 1})
		skipUnsupported(t, "claim", err)
		if g := claimedIDs(claimed); !slices.Equal(g, []int64{got[0], got[2]}) {
			t.Fatalf("claim after resume = %v, want a's tasks %d %d", g, got[0], got[2])
		}
	})
	t.Run("Traceparent", func(t *testing.T) {
		// A new task's traceparent is stored by the enqueue's insert and
		// comes back from a read and from its claim.
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		traced := task("a", stOpen)
		traced.Traceparent = tp
		got := insert(t, ex, traced, task("a", stOpen))
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: got})
		must(t, "get", err)
		if rows[0].Traceparent != tp || rows[1].Traceparent != "" {
			t.Fatalf("traceparents read back: %q, %q", rows[0].Traceparent, rows[1].Traceparent)
		}
		claimed, err := ex.TaskClaim(ctx, driver.TaskClaimParams{
			TaskClaimableParams: driver.TaskClaimableParams{State: stOpen, Now: sec(2), Limit: 2},
			Leases:              leases("w", "h1", "h2"), To: stClaimed, AttemptsAdded: 1})
		skipUnsupported(t, "claim", err)
		if len(claimed) != 2 || claimed[0].Traceparent != tp || claimed[1].Traceparent != "" {
			t.Fatalf("claimed %+v: want the traceparent of the first task only", claimed)
		}
	})
	t.Run("Limits", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		keyed := func(keys string) driver.TaskRow {
			r := task("a", stOpen)
			r.ConcurrencyKeys = keys
			return r
		}
		got := insert(t, ex, keyed(`["x"]`), task("a", stOpen), keyed(`["y","x"]`), keyed(`["y"]`))
		claim := func(p driver.TaskClaimParams, hashes ...string) []int64 {
			t.Helper()
			p.TaskClaimableParams.State, p.TaskClaimableParams.Now, p.TaskClaimableParams.Limit = stOpen, sec(2), len(hashes)
			p.Leases, p.To, p.AttemptsAdded = leases("w", hashes...), stClaimed, 1
			rows, err := ex.TaskClaim(ctx, p)
			skipUnsupported(t, "claim", err)
			return claimedIDs(rows)
		}
		// Stored and read back as written.
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: got})
		must(t, "get", err)
		if rows[2].ConcurrencyKeys != `["y","x"]` || rows[1].ConcurrencyKeys != "" {
			t.Fatalf("keys read back: %q, %q", rows[2].ConcurrencyKeys, rows[1].ConcurrencyKeys)
		}
		// The keyed read skips the tasks holding a saturated key, and
		// only those.
		for _, c := range []struct {
			saturated []string
			want      []int64
		}{{nil, got}, {[]string{"x"}, []int64{got[1], got[3]}}, {[]string{"y", "z"}, []int64{got[0], got[1]}}} {
			rows, err := ex.TaskClaimable(ctx, driver.TaskClaimableParams{State: stOpen, Now: sec(2), Limit: 10, Saturated: c.saturated})
			skipUnsupported(t, "claimable", err)
			if g := ids(rows); !slices.Equal(g, c.want) {
				t.Errorf("claimable with %v saturated = %v, want %v", c.saturated, g, c.want)
			}
		}
		// Limits: put, replace (created_by and created_at kept), list by
		// name, a pattern taken, delete.
		must(t, "limit put", ex.LimitPut(ctx, driver.LimitRow{Name: "b", Pattern: "x", MaxRunning: 1, CreatedBy: "ops", CreatedAt: sec(1), UpdatedAt: sec(1)}))
		must(t, "limit put", ex.LimitPut(ctx, driver.LimitRow{Name: "a", Pattern: "y*", MaxRunning: 2, CreatedBy: "ops", CreatedAt: sec(1), UpdatedAt: sec(1)}))
		must(t, "limit replace", ex.LimitPut(ctx, driver.LimitRow{Name: "b", Pattern: "x", MaxRunning: 3, CreatedBy: "other", CreatedAt: sec(5), UpdatedAt: sec(5)}))
		if err := ex.LimitPut(ctx, driver.LimitRow{Name: "c", Pattern: "x", MaxRunning: 1, CreatedAt: sec(1), UpdatedAt: sec(1)}); !errors.Is(err, driver.ErrUniqueViolation) {
			t.Fatalf("a second limit of pattern x: %v, want ErrUniqueViolation", err)
		}
		for _, lock := range []driver.Lock{driver.LockNone, driver.LockUpdate} {
			list, err := ex.LimitList(ctx, driver.LimitListParams{Lock: lock})
			must(t, "limit list", err)
			if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" || list[1].MaxRunning != 3 || list[1].CreatedBy != "ops" ||
				!list[1].CreatedAt.Equal(sec(1)) || !list[1].UpdatedAt.Equal(sec(5)) {
				t.Fatalf("limit list (lock %d) = %+v", lock, list)
			}
		}
		// With a limit, a claim takes no keyed task unless it names it
		// (IDs, in the order given, those still OPEN).
		if g := claim(driver.TaskClaimParams{}, "h1", "h2", "h3"); !slices.Equal(g, []int64{got[1]}) {
			t.Fatalf("claim with limits = %v, want only the task without keys %d", g, got[1])
		}
		if g := claim(driver.TaskClaimParams{IDs: []int64{got[3], got[1], got[0]}}, "h4", "h5", "h6"); !slices.Equal(g, []int64{got[0], got[3]}) {
			t.Fatalf("claim by ids = %v, want %d %d (claim order, the claimed one left)", g, got[0], got[3])
		}
		held, err := ex.TaskKeysHeld(ctx)
		must(t, "keys held", err)
		slices.Sort(held)
		if !slices.Equal(held, []string{`["x"]`, `["y"]`}) {
			t.Fatalf("keys held = %q", held)
		}
		for i, want := range []int{1, 0} {
			n, err := ex.LimitDelete(ctx, "a")
			must(t, "limit delete", err)
			if n != want {
				t.Fatalf("delete a (%d) = %d, want %d", i+1, n, want)
			}
		}
		must(t, "limit delete", func() error { _, err := ex.LimitDelete(ctx, "b"); return err }())
		// The starts of rate-limited keys: since a time, oldest first;
		// pruned up to a time.
		must(t, "key starts", ex.KeyStartInsertMany(ctx, []string{"x", "y"}, sec(10)))
		must(t, "key starts", ex.KeyStartInsertMany(ctx, []string{"x"}, sec(20)))
		starts, err := ex.KeyStartsSince(ctx, sec(10))
		must(t, "key starts since", err)
		if len(starts) != 1 || starts[0].Key != "x" || !starts[0].StartedAt.Equal(sec(20)) {
			t.Fatalf("starts since 10 = %+v, want x at 20", starts)
		}
		if n, err := ex.KeyStartsPrune(ctx, sec(10)); err != nil || n != 2 {
			t.Fatalf("prune up to 10 = %d, %v; want 2", n, err)
		}
		if starts, err := ex.KeyStartsSince(ctx, sec(0)); err != nil || len(starts) != 1 {
			t.Fatalf("starts after the prune = %+v, %v", starts, err)
		}
		must(t, "rate limit put", ex.LimitPut(ctx, driver.LimitRow{Name: "r", Pattern: "r", Starts: 60, IntervalMs: 60000, CreatedAt: sec(1), UpdatedAt: sec(1)}))
		list, err := ex.LimitList(ctx, driver.LimitListParams{})
		must(t, "limit list", err)
		if len(list) != 1 || list[0].Starts != 60 || list[0].IntervalMs != 60000 {
			t.Fatalf("rate limit read back = %+v", list)
		}
		must(t, "limit delete", func() error { _, err := ex.LimitDelete(ctx, "r"); return err }())
		// Without limits, the claim takes keyed tasks again.
		if g := claim(driver.TaskClaimParams{}, "h7", "h8"); !slices.Equal(g, []int64{got[2]}) {
			t.Fatalf("claim without limits = %v, want %d", g, got[2])
		}
	})
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(typ string, prio, created, attempts int) driver.TaskRow {
			r := task(typ, stOpen)
			r.Priority, r.CreatedAt, r.Attempts, r.RunAfter = prio, sec(created), attempts, sec(-5)
			return r
		}
		got := insert(t, ex, mk("a", 1, 0, 0), mk("b", 5, 0, 2), mk("a", 1, -1, 0), mk("c", 3, 0, 0), task("a", stParked))
		must(t, "dependency insert", ex.TaskDepInsertMany(ctx, []driver.TaskDep{
			{TaskID: got[1], DependsOn: got[3]}, {TaskID: got[1], DependsOn: got[0]}}))
		p := driver.TaskClaimParams{
			TaskClaimableParams: driver.TaskClaimableParams{State: stOpen, Excluded: []string{stParked}, Now: sec(60), Limit: 3},
			Leases:              leases("w", "h1", "h2", "h3", "h4"), To: stClaimed, AttemptsAdded: 1}
		// Each row is leased to its own claimer: the second to another one,
		// for longer.
		p.Leases[1] = driver.TaskClaimLease{TokenHash: "h2", ClaimedBy: "w2", ExpiresAt: sec(180), Ms: 120000}
		p.Leases[2].AgentTokenHash = "a3" // the one lease with an agent credential
		claimed, err := ex.TaskClaim(ctx, p)
		skipUnsupported(t, "claim", err)
		// Claim order; the i-th row gets the i-th lease; Limit caps it.
		if want := []int64{got[1], got[3], got[2]}; !slices.Equal(claimedIDs(claimed), want) {
			t.Fatalf("claimed %v, want %v", claimedIDs(claimed), want)
		}
		for i, c := range claimed {
			want := get(t, ex, c.ID)
			sameTask(t, c.TaskRow, want)
			l := p.Leases[i]
			if c.State != stClaimed || c.LeaseTokenHash != l.TokenHash || c.AgentTokenHash != l.AgentTokenHash || c.ClaimedBy != l.ClaimedBy ||
				!c.ClaimedAt.Equal(sec(60)) || !c.LeaseRenewedAt.Equal(sec(60)) || !c.LeaseExpiresAt.Equal(l.ExpiresAt) ||
				c.LeaseMs != l.Ms || !c.RunAfter.IsZero() || !c.UpdatedAt.Equal(sec(60)) || !c.StateChangedAt.Equal(sec(60)) {
				t.Errorf("claimed row %d: %+v", i, c.TaskRow)
			}
		}
		if claimed[0].Attempts != 3 || claimed[1].Attempts != 1 {
			t.Errorf("attempts %d %d, want 3 1 (increased by AttemptsAdded)", claimed[0].Attempts, claimed[1].Attempts)
		}
		if want := []int64{got[0], got[3]}; !slices.Equal(claimed[0].DependsOn, want) || claimed[1].DependsOn != nil {
			t.Errorf("dependencies %v %v, want %v and none", claimed[0].DependsOn, claimed[1].DependsOn, want)
		}
		// What authenticates a task's agent token is read from its row.
		for i, c := range claimed {
			cred, err := ex.PrincipalTaskCredential(ctx, c.ID)
			l := p.Leases[i]
			if err != nil || cred.LeaseTokenHash != l.TokenHash || cred.AgentTokenHash != l.AgentTokenHash ||
				cred.ClaimedBy != l.ClaimedBy || !cred.ClaimedAt.Equal(sec(60)) {
				t.Errorf("credential of claimed task %d: %+v, %v", c.ID, cred, err)
			}
		}
		if _, err := ex.PrincipalTaskCredential(ctx, 1<<40); !errors.Is(err, driver.ErrNoRows) {
			t.Errorf("credential of no task: %v, want ErrNoRows", err)
		}
		// A claim writes no event: the attempt lives on the row.
		for _, id := range claimedIDs(claimed) {
			if evs, err := ex.TaskEventList(ctx, id); err != nil || len(evs) != 0 {
				t.Errorf("events of claimed task %d: %+v %v, want none", id, evs, err)
			}
		}
		// Only the last OPEN row is left; fewer leases than Limit cap the
		// claim too; one type, then several.
		p.Types, p.Leases = []string{"b"}, leases("w", "h5")
		if c, err := ex.TaskClaim(ctx, p); err != nil || len(c) != 0 {
			t.Fatalf("claim of type b: %v %v, want none", claimedIDs(c), err)
		}
		p.Types = []string{"b", "a"}
		c, err := ex.TaskClaim(ctx, p)
		must(t, "claim", err)
		if !slices.Equal(claimedIDs(c), []int64{got[0]}) || c[0].LeaseTokenHash != "h5" {
			t.Fatalf("claim of types b, a = %v", claimedIDs(c))
		}
		p.Types = nil
		if c, err := ex.TaskClaim(ctx, p); err != nil || len(c) != 0 {
			t.Fatalf("claim of an empty queue: %v %v", claimedIDs(c), err)
		}
		if r := get(t, ex, got[4]); r.State != stParked {
			t.Fatalf("excluded task: %s", r.State)
		}
		// Then: the claim moves on to RUNNING at once, with no event, in
		// every form of the claim.
		for _, types := range [][]string{nil, {"r"}, {"r", "s"}} {
			more := insert(t, ex, mk("r", 1, 0, 0), mk("s", 1, 1, 0))
			p.Types, p.Leases = types, leases("w", "r1", "r2")
			p.Then = driver.TaskClaimThen{To: stRunning}
			c, err := ex.TaskClaim(ctx, p)
			must(t, "claim running", err)
			want := more
			if len(types) == 1 {
				want = more[:1]
			}
			if !slices.Equal(claimedIDs(c), want) {
				t.Fatalf("claim running of %v = %v, want %v", types, claimedIDs(c), want)
			}
			for _, r := range c {
				sameTask(t, r.TaskRow, get(t, ex, r.ID))
				if r.State != stRunning || r.Attempts != 1 || r.ClaimedBy != "w" || !r.StateChangedAt.Equal(sec(60)) {
					t.Errorf("claimed running: %+v", r.TaskRow)
				}
				if evs, err := ex.TaskEventList(ctx, r.ID); err != nil || len(evs) != 0 {
					t.Errorf("events of a claim straight to RUNNING: %+v %v, want none", evs, err)
				}
			}
			if len(types) == 1 { // the other is left for the next form
				c, err := ex.TaskClaim(ctx, driver.TaskClaimParams{TaskClaimableParams: driver.TaskClaimableParams{
					State: stOpen, Now: sec(60), Limit: 5}, Leases: leases("w", "x"), To: stClaimed,
					AttemptsAdded: 1})
				must(t, "claim the rest", err)
				if !slices.Equal(claimedIDs(c), more[1:]) || c[0].State != stClaimed {
					t.Fatalf("claim without Then = %v", claimedIDs(c))
				}
			}
		}
	})
	t.Run("LeaseExpired", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(state string, expires, renewed time.Time) driver.TaskRow {
			r := task("a", state)
			r.LeaseExpiresAt, r.LeaseRenewedAt = expires, renewed
			return r
		}
		got := insert(t, ex,
			mk(stClaimed, sec(10), sec(0)),      // 0: expired, renewed long ago
			mk(stRunning, sec(10), time.Time{}), // 1: never renewed
			mk(stRunning, sec(10), sec(9)),      // 2: renewed within the window
			mk(stRunning, sec(11), sec(0)),      // 3: not expired yet
			mk(stParked, sec(0), sec(0)),        // 4: not a leased state
			mk(stClaimed, sec(0), sec(0)),       // 5: excluded below
			mk(stOpen, time.Time{}, time.Time{}),
		)
		p := driver.TaskLeaseExpiredParams{States: []string{stClaimed, stRunning}, Excluded: []string{stParked},
			ExpiredAt: sec(10), RenewedBefore: sec(5), Limit: 10}
		rows, err := ex.TaskLeaseExpired(ctx, p)
		skipUnsupported(t, "lease expired", err)
		if want := []int64{got[0], got[1], got[5]}; !slices.Equal(ids(rows), want) {
			t.Fatalf("expired = %v, want %v", ids(rows), want)
		}
		p.Limit = 1
		if rows, _ := ex.TaskLeaseExpired(ctx, p); !slices.Equal(ids(rows), []int64{got[0]}) {
			t.Fatalf("expired limit 1 = %v", ids(rows))
		}
		p.Limit, p.Excluded = 10, []string{stClaimed}
		if rows, _ := ex.TaskLeaseExpired(ctx, p); !slices.Equal(ids(rows), []int64{got[1]}) {
			t.Fatalf("expired with CLAIMED excluded = %v, want [%d]", ids(rows), got[1])
		}
	})
	t.Run("ListMatchAndSort", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(title, by string, prio, updated int) driver.TaskRow {
			r := task("a", stOpen)
			r.Title, r.CreatedBy, r.Priority, r.UpdatedAt = title, by, prio, sec(updated)
			return r
		}
		got := insert(t, ex, mk("Fix the Parser", "alice", 2, 30), mk("b", "bob", 5, 10), mk("parser docs", "bob", 2, 20), mk("d", "alice", 5, 10))
		for _, c := range []struct {
			p    driver.TaskListParams
			want []int64
		}{
			// Match is lower-cased by the caller; the stored text is matched in either case.
			{driver.TaskListParams{Match: "parser", Limit: 10}, []int64{got[0], got[2]}},
			{driver.TaskListParams{CreatedBy: "bob", Limit: 10}, []int64{got[1], got[2]}},
			{driver.TaskListParams{Match: "parser", CreatedBy: "alice", Limit: 10}, []int64{got[0]}},
			{driver.TaskListParams{Sort: driver.TaskSortIDDesc, Limit: 10}, []int64{got[3], got[2], got[1], got[0]}},
			{driver.TaskListParams{Sort: driver.TaskSortIDDesc, After: got[2], Limit: 10}, []int64{got[1], got[0]}},
			{driver.TaskListParams{Sort: driver.TaskSortUpdated, Limit: 10}, []int64{got[1], got[3], got[2], got[0]}},
			{driver.TaskListParams{Sort: driver.TaskSortUpdated, After: got[1], AfterUpdated: sec(10), Limit: 10}, []int64{got[3], got[2], got[0]}},
			{driver.TaskListParams{Sort: driver.TaskSortUpdatedDesc, Limit: 10}, []int64{got[0], got[2], got[3], got[1]}},
			{driver.TaskListParams{Sort: driver.TaskSortUpdatedDesc, After: got[3], AfterUpdated: sec(10), Limit: 10}, []int64{got[1]}},
			{driver.TaskListParams{Sort: driver.TaskSortPriority, Limit: 10}, []int64{got[1], got[3], got[0], got[2]}},
			{driver.TaskListParams{Sort: driver.TaskSortPriority, After: got[3], AfterPriority: 5, Limit: 10}, []int64{got[0], got[2]}},
			{driver.TaskListParams{Sort: driver.TaskSortPriority, Match: "parser", Limit: 1}, []int64{got[0]}},
		} {
			rows, err := ex.TaskList(ctx, c.p)
			skipUnsupported(t, "list", err)
			if !slices.Equal(ids(rows), c.want) {
				t.Errorf("list %+v = %v, want %v", c.p, ids(rows), c.want)
			}
		}
	})
	t.Run("ListAndCount", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(typ, state string, changed int) driver.TaskRow {
			r := task(typ, state)
			r.StateChangedAt = sec(changed)
			return r
		}
		got := insert(t, ex, mk("a", stOpen, 0), mk("b", stHeld, 10), mk("a", stHeld, 20), mk("b", stOpen, 30))
		nullChanged := task("a", stHeld)
		nullChanged.StateChangedAt = time.Time{}
		got = append(got, insert(t, ex, nullChanged)...)
		stateOf := map[int64]string{got[0]: stOpen, got[1]: stHeld, got[2]: stHeld, got[3]: stOpen, got[4]: stHeld}
		for _, c := range []struct {
			p    driver.TaskListParams
			want []int64
		}{
			{driver.TaskListParams{Limit: 10}, got},
			{driver.TaskListParams{Limit: 2}, got[:2]},
			{driver.TaskListParams{After: got[1], Limit: 2}, got[2:4]},
			{driver.TaskListParams{States: []string{stHeld}, Limit: 10}, []int64{got[1], got[2], got[4]}},
			{driver.TaskListParams{Types: []string{"b"}, Limit: 10}, []int64{got[1], got[3]}},
			{driver.TaskListParams{States: []string{stHeld, stOpen}, Types: []string{"a"}, Limit: 10}, []int64{got[0], got[2], got[4]}},
			// NULL state_changed_at is never before anything.
			{driver.TaskListParams{StateChangedBefore: sec(20), Limit: 10}, got[:3]},
			{driver.TaskListParams{States: []string{stHeld}, StateChangedBefore: sec(19), Limit: 10}, []int64{got[1]}},
		} {
			rows, err := ex.TaskList(ctx, c.p)
			skipUnsupported(t, "list", err)
			if !slices.Equal(ids(rows), c.want) {
				t.Errorf("list %+v = %v, want %v", c.p, ids(rows), c.want)
			}
			// The same page locked, in a write transaction (a bulk's selection).
			must(t, "list locked", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				p := c.p
				p.Lock = driver.LockUpdate
				locked, err := ex.TaskList(ctx, p)
				if err != nil || !slices.Equal(ids(locked), c.want) {
					return fmt.Errorf("list %+v locked = %v, %v; want %v", c.p, ids(locked), err, c.want)
				}
				return nil
			}))
			if c.p.After != 0 || c.p.Limit != 10 {
				continue
			}
			n, err := ex.TaskCount(ctx, driver.TaskCountParams{States: c.p.States, Types: c.p.Types, StateChangedBefore: c.p.StateChangedBefore})
			must(t, "count", err)
			if n != len(c.want) {
				t.Errorf("count %+v = %d, want %d", c.p, n, len(c.want))
			}
			// Per state, in one read: a row per state that has tasks, by state.
			var want []driver.TaskStateCount
			for _, id := range c.want {
				i := slices.IndexFunc(want, func(sc driver.TaskStateCount) bool { return sc.State == stateOf[id] })
				if i < 0 {
					want, i = append(want, driver.TaskStateCount{State: stateOf[id]}), len(want)
				}
				want[i].Count++
			}
			slices.SortFunc(want, func(a, b driver.TaskStateCount) int { return strings.Compare(a.State, b.State) })
			counts, err := ex.TaskCountByState(ctx, driver.TaskCountParams{States: c.p.States, Types: c.p.Types, StateChangedBefore: c.p.StateChangedBefore})
			must(t, "count by state", err)
			if !slices.Equal(counts, want) {
				t.Errorf("count by state %+v = %v, want %v", c.p, counts, want)
			}
		}
		counts, err := ex.TaskCountByState(ctx, driver.TaskCountParams{States: []string{stDone}})
		if err != nil || len(counts) != 0 {
			t.Errorf("count by state of a state no task is in = %v, %v; want no rows", counts, err)
		}
	})
	t.Run("DedupeFind", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		mk := func(key, state string) driver.TaskRow {
			r := task("a", state)
			r.DedupeKey = key
			return r
		}
		got := insert(t, ex, mk("k", stDone), mk("k", stFailed), mk("k", stOpen), mk("once", stDone), mk("once", stFailed), mk("", stOpen))
		find := func(key string, all bool) (int64, error) {
			return ex.TaskDedupeFind(ctx, driver.TaskDedupeFindParams{Key: key, Terminal: terminal, IncludeTerminal: all})
		}
		id, err := find("k", false)
		skipUnsupported(t, "dedupe find", err)
		if id != got[2] {
			t.Fatalf("live task of k = %d, want %d", id, got[2])
		}
		if id, _ := find("k", true); id != got[2] {
			t.Fatalf("any task of k = %d, want the live one %d first", id, got[2])
		}
		_, err = find("once", false)
		isNoRows(t, "live task of a finished key", err)
		if id, _ := find("once", true); id != got[4] {
			t.Fatalf("any task of once = %d, want the newest %d", id, got[4])
		}
		for _, all := range []bool{false, true} {
			_, err = find("", all)
			isNoRows(t, "the empty key", err)
			_, err = find("nope", all)
			isNoRows(t, "an unknown key", err)
		}
		// Many keys at once: per key the task find(key, true) finds, and
		// whether it is finished; keys no task has (and "") are absent.
		hits, err := ex.TaskDedupeFindMany(ctx, driver.TaskDedupeFindManyParams{
			Keys: []string{"once", "nope", "k", "", "k"}, Terminal: terminal})
		skipUnsupported(t, "dedupe find many", err)
		want := []driver.TaskDedupeHit{{Key: "k", ID: got[2]}, {Key: "once", ID: got[4], Terminal: true}}
		if !slices.Equal(hits, want) {
			t.Fatalf("dedupe find many = %+v, want %+v", hits, want)
		}
		if hits, err := ex.TaskDedupeFindMany(ctx, driver.TaskDedupeFindManyParams{Terminal: terminal}); err != nil || len(hits) != 0 {
			t.Fatalf("no keys: %+v %v", hits, err)
		}
	})
	t.Run("Dependencies", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		got := insert(t, ex, task("a", stOpen), task("a", stOpen), task("a", stWaiting), task("a", stWaiting), task("a", stOpen))
		a, b, w1, w2, o := got[0], got[1], got[2], got[3], got[4]
		dep := func(task, on int64) driver.TaskDep { return driver.TaskDep{TaskID: task, DependsOn: on} }
		err := ex.TaskDepInsertMany(ctx, []driver.TaskDep{dep(w2, b), dep(w1, b), dep(w1, a), dep(w2, a), dep(o, a)})
		skipUnsupported(t, "dependency insert", err)
		list, err := ex.TaskDepList(ctx, []int64{w2, w1, 999})
		must(t, "dependency list", err)
		if want := []driver.TaskDep{dep(w1, a), dep(w1, b), dep(w2, a), dep(w2, b)}; !slices.Equal(list, want) {
			t.Fatalf("dependencies = %v, want %v", list, want)
		}
		if err := ex.TaskDepInsertMany(ctx, []driver.TaskDep{dep(o, b), dep(o, a)}); !errors.Is(err, driver.ErrUniqueViolation) {
			t.Fatalf("an edge twice: err = %v, want ErrUniqueViolation", err)
		}
		if l, _ := ex.TaskDepList(ctx, []int64{o}); !slices.Equal(l, []driver.TaskDep{dep(o, a)}) {
			t.Fatalf("after the refused insert: %v", l)
		}
		// Both ends: w1's own edges and the edges into b, each once.
		adj, err := ex.TaskDepListAdjacent(ctx, []int64{w1, b, 999})
		must(t, "adjacent dependency list", err)
		if want := []driver.TaskDep{dep(w1, a), dep(w1, b), dep(w2, b)}; !slices.Equal(adj, want) {
			t.Fatalf("edges at w1 and b = %v, want %v", adj, want)
		}
		adj, err = ex.TaskDepListAdjacent(ctx, []int64{a})
		must(t, "adjacent dependency list", err)
		if want := []driver.TaskDep{dep(w1, a), dep(w2, a), dep(o, a)}; !slices.Equal(adj, want) {
			t.Fatalf("edges at a = %v, want %v", adj, want)
		}
		if adj, err := ex.TaskDepListAdjacent(ctx, []int64{999}); err != nil || len(adj) != 0 {
			t.Fatalf("edges at no task = %v %v", adj, err)
		}
		// Dependants in one state, each once, by id, under every lock.
		for _, lock := range []driver.Lock{driver.LockNone, driver.LockUpdate, driver.LockUpdateSkip, driver.LockShare} {
			err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				rows, err := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: []int64{b, a}, State: stWaiting, Lock: lock})
				if err != nil {
					return err
				}
				if !slices.Equal(ids(rows), []int64{w1, w2}) {
					return fmt.Errorf("lock %d: dependants %v, want [%d %d]", lock, ids(rows), w1, w2)
				}
				return nil
			})
			must(t, "dependants", err)
		}
		rows, err := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: []int64{a}, State: stOpen})
		must(t, "dependants", err)
		if !slices.Equal(ids(rows), []int64{o}) {
			t.Fatalf("OPEN dependants of a = %v, want [%d]", ids(rows), o)
		}
		must(t, "dependency delete", ex.TaskDepDeleteMany(ctx, []driver.TaskDep{dep(w1, a), dep(w1, 999), dep(o, b)}))
		list, _ = ex.TaskDepList(ctx, []int64{w1, w2, o})
		if want := []driver.TaskDep{dep(w1, b), dep(w2, a), dep(w2, b), dep(o, a)}; !slices.Equal(list, want) {
			t.Fatalf("after delete: %v, want %v", list, want)
		}
		// An edge to a task that does not exist is refused (foreign key).
		if err := ex.TaskDepInsertMany(ctx, []driver.TaskDep{dep(o, 999)}); err == nil {
			t.Fatal("an edge to no task was accepted")
		}
		must(t, "graph lock", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			return ex.TaskLockDependencyGraph(ctx)
		}))
	})
	t.Run("DependencyGraphLock", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		if d.Dialect() != "postgres" {
			t.Skip("SQLite's one writer serialises dependency edits")
		}
		ctx := Ctx(t)
		// A second holder waits until the first transaction ends.
		release := make(chan struct{})
		held := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				if err := ex.TaskLockDependencyGraph(ctx); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		second := make(chan error, 1)
		go func() {
			second <- d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				return ex.TaskLockDependencyGraph(ctx)
			})
		}()
		// Wait until the second one is seen waiting for the lock.
		waitfor.Until(t, "a waiter on the advisory lock", func() bool {
			return db.Exec(t, `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)
THEN RAISE EXCEPTION 'no waiter'; END IF; END $$`) == nil
		})
		select {
		case err := <-second:
			t.Fatalf("the second lock was taken while the first was held (%v)", err)
		default:
		}
		close(release)
		must(t, "first", <-first)
		must(t, "second", <-second)
	})
	t.Run("SkipLocked", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		if d.Dialect() != "postgres" {
			t.Skip("SQLite's one writer: no row is ever held by another transaction")
		}
		ex, ctx := d.Executor(), Ctx(t)
		expired := func() driver.TaskRow {
			r := task("a", stRunning)
			r.LeaseExpiresAt = sec(0)
			return r
		}
		got := insert(t, ex, expired(), expired(), task("a", stOpen))
		heldID, freeID := got[0], got[1]
		must(t, "dependencies", ex.TaskDepInsertMany(ctx, []driver.TaskDep{{TaskID: heldID, DependsOn: got[2]}, {TaskID: freeID, DependsOn: got[2]}}))
		pending := func(task int64) driver.AbortRow {
			return driver.AbortRow{TaskID: task, LeaseTokenHash: "h", Attempt: 1, RequestedAt: T0, DeadlineAt: T0, Outcome: "abort_pending"}
		}
		heldAbort, err := ex.AbortInsert(ctx, pending(heldID))
		must(t, "abort", err)
		freeAbort, err := ex.AbortInsert(ctx, pending(freeID))
		must(t, "abort", err)
		// Another transaction holds task heldID and its abort.
		held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				if _, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{heldID}, Lock: driver.LockUpdate}); err != nil {
					return err
				}
				if _, err := ex.AbortGet(ctx, driver.AbortGetParams{ID: heldAbort.ID, Lock: driver.LockUpdate}); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		leases, err1 := ex.TaskLeaseExpired(ctx, driver.TaskLeaseExpiredParams{States: []string{stRunning}, ExpiredAt: sec(1),
			RenewedBefore: sec(1), Limit: 10})
		rows, err2 := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{heldID, freeID}, Lock: driver.LockUpdateSkip})
		deps, err3 := ex.TaskDependants(ctx, driver.TaskDependantsParams{DependsOn: []int64{got[2]}, State: stRunning, Lock: driver.LockUpdateSkip})
		due, err4 := ex.AbortPendingDue(ctx, driver.AbortPendingDueParams{Outcome: "abort_pending", Now: sec(1), Limit: 10})
		close(release)
		must(t, "holder", <-done)
		must(t, "reads", errors.Join(err1, err2, err3, err4))
		for what, ids := range map[string][]int64{"lease expired": ids(leases), "get many": ids(rows), "dependants": ids(deps)} {
			if !slices.Equal(ids, []int64{freeID}) {
				t.Errorf("%s while %d is held = %v, want [%d]", what, heldID, ids, freeID)
			}
		}
		if len(due) != 1 || due[0].ID != freeAbort.ID {
			t.Errorf("aborts due while abort %d is held = %+v, want only %d", heldAbort.ID, due, freeAbort.ID)
		}
	})
	t.Run("Events", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		got := insert(t, ex, task("a", stOpen), task("a", stOpen))
		evs := []driver.TaskEventRow{
			{TaskID: got[0], At: sec(0), Actor: "alice", ToState: stOpen, Reason: "enqueued"},
			{TaskID: got[1], At: sec(1), Actor: "bob", ToState: stOpen},
			{TaskID: got[0], At: sec(2), Actor: "w", FromState: stOpen, ToState: stClaimed, Attempt: 1, Reason: "claimed"},
			{TaskID: got[0], At: sec(2), Actor: "w", FromState: stClaimed, ToState: stRunning, Attempt: 1, Reason: "running",
				Changes: `[{"field":"title","old":"a","new":"b"}]`},
		}
		err := ex.TaskEventInsertMany(ctx, evs)
		skipUnsupported(t, "event insert", err)
		list, err := ex.TaskEventList(ctx, got[0])
		must(t, "event list", err)
		if len(list) != 3 {
			t.Fatalf("events %+v", list)
		}
		for i, want := range []driver.TaskEventRow{evs[0], evs[2], evs[3]} {
			if i > 0 && list[i].EventID <= list[i-1].EventID {
				t.Errorf("event ids not ascending: %+v", list)
			}
			want.EventID = list[i].EventID
			if list[i] != want {
				t.Errorf("event %d = %+v, want %+v", i, list[i], want)
			}
		}
		if none, err := ex.TaskEventList(ctx, 999); err != nil || len(none) != 0 {
			t.Fatalf("events of no task = %v, %v", none, err)
		}
		must(t, "no events", ex.TaskEventInsertMany(ctx, nil))
		// One event alone (a dialect may have a form of its own for it),
		// with its changes byte for byte.
		one := driver.TaskEventRow{TaskID: got[1], At: sec(3), Actor: "op", FromState: stOpen, ToState: stOpen, Reason: "update: priority",
			Changes: `[{"field":"priority", "old":0,"new":7}]`}
		must(t, "one event", ex.TaskEventInsertMany(ctx, []driver.TaskEventRow{one}))
		list, err = ex.TaskEventList(ctx, got[1])
		must(t, "event list", err)
		if one.EventID = list[len(list)-1].EventID; len(list) != 2 || list[1] != one {
			t.Fatalf("events %+v, want the last %+v", list, one)
		}
	})
	t.Run("EventWindow", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		got := insert(t, ex, task("a", stOpen), task("a", stOpen))
		a, b := got[0], got[1]
		must(t, "events", ex.TaskEventInsertMany(ctx, []driver.TaskEventRow{
			{TaskID: a, At: sec(-30), ToState: stOpen}, // before the window
			{TaskID: b, At: sec(5), ToState: stOpen},
			{TaskID: a, At: sec(10), FromState: stOpen, ToState: stClaimed},
			{TaskID: a, At: sec(70), FromState: stClaimed, ToState: stOpen}, // reclaimed
			{TaskID: b, At: sec(75), FromState: stOpen, ToState: stClaimed},
			{TaskID: a, At: sec(100), FromState: stOpen, ToState: stClaimed},
			{TaskID: b, At: sec(119), FromState: stClaimed, ToState: "COMPLETED"},
			{TaskID: b, At: sec(120), FromState: "COMPLETED", ToState: "COMPLETED"}, // at Until: outside
		}))
		w := driver.TaskEventWindowParams{Since: sec(0), Until: sec(120), Limit: 10}
		mins, err := ex.TaskEventMinutes(ctx, w)
		must(t, "event minutes", err)
		want := []driver.TaskEventMinute{
			{Minute: sec(0), From: "", To: stOpen, Count: 1}, {Minute: sec(0), From: stOpen, To: stClaimed, Count: 1},
			{Minute: sec(60), From: stClaimed, To: "COMPLETED", Count: 1}, {Minute: sec(60), From: stClaimed, To: stOpen, Count: 1},
			{Minute: sec(60), From: stOpen, To: stClaimed, Count: 2},
		}
		if len(mins) != len(want) {
			t.Fatalf("event minutes %+v, want %+v", mins, want)
		}
		for i := range want {
			if !mins[i].Minute.Equal(want[i].Minute) || mins[i].From != want[i].From || mins[i].To != want[i].To || mins[i].Count != want[i].Count {
				t.Errorf("event minute %d = %+v, want %+v", i, mins[i], want[i])
			}
		}
		// The claims, newest first, each with when its task last became OPEN.
		waits, err := ex.TaskClaimWaits(ctx, w)
		must(t, "claim waits", err)
		wantWaits := [][2]time.Time{{sec(100), sec(70)}, {sec(75), sec(5)}, {sec(10), sec(-30)}}
		if len(waits) != len(wantWaits) {
			t.Fatalf("claim waits %+v, want %v", waits, wantWaits)
		}
		for i, ww := range wantWaits {
			if !waits[i].ClaimedAt.Equal(ww[0]) || !waits[i].OpenedAt.Equal(ww[1]) {
				t.Errorf("claim wait %d = %+v, want claimed %v opened %v", i, waits[i], ww[0], ww[1])
			}
		}
		w.Limit = 1
		if waits, err := ex.TaskClaimWaits(ctx, w); err != nil || len(waits) != 1 || !waits[0].ClaimedAt.Equal(sec(100)) {
			t.Fatalf("claim waits limited to 1: %+v, %v", waits, err)
		}
	})
	t.Run("Output", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		ids := insert(t, ex, task("a", stRunning), task("b", stRunning))
		id, other := ids[0], ids[1]
		app := func(task int64, attempt int, body string) driver.OutputRow {
			t.Helper()
			r, err := ex.OutputAppend(ctx, driver.OutputRow{TaskID: task, Attempt: attempt, Stream: "stdout", Body: body, Size: len(body), CreatedAt: sec(1)})
			skipUnsupported(t, "output append", err)
			return r
		}
		a1, a2 := app(id, 1, "hello "), app(id, 1, "world\n")
		b1 := app(other, 1, "x")
		// A new attempt starts at offset 0, the seq goes on.
		n1 := app(id, 2, "again")
		if a1.Seq != 1 || a2.Seq != 2 || b1.Seq != 1 || n1.Seq != 3 || a1.ID == 0 {
			t.Fatalf("seqs %+v %+v %+v %+v", a1, a2, b1, n1)
		}
		if a1.ByteOffset != 0 || a2.ByteOffset != 6 || n1.ByteOffset != 0 || a2.Size != 6 || a2.Stream != "stdout" || a2.Body != "world\n" || !a2.CreatedAt.Equal(sec(1)) {
			t.Fatalf("offsets %+v %+v %+v", a1, a2, n1)
		}
		list, err := ex.OutputList(ctx, driver.OutputListParams{TaskID: id, After: 1, Limit: 10})
		must(t, "output list", err)
		if !slices.Equal(list, []driver.OutputRow{a2, n1}) {
			t.Fatalf("output after 1 = %+v", list)
		}
		if list, err = ex.OutputList(ctx, driver.OutputListParams{TaskID: id, After: 0, Limit: 1}); err != nil || !slices.Equal(list, []driver.OutputRow{a1}) {
			t.Fatalf("output limit 1 = %+v, %v", list, err)
		}
		// The trim deletes attempt 1's rows starting before the cut, never
		// another attempt's or those from seq before on.
		a3 := app(id, 1, "tail")
		gone, err := ex.OutputTrim(ctx, driver.OutputTrimParams{TaskID: id, Attempt: 1, Cut: 12, Before: a3.Seq})
		must(t, "output trim", err)
		if len(gone) != 2 || gone[0].Seq+gone[1].Seq != 3 || gone[0].Size+gone[1].Size != 12 {
			t.Fatalf("trimmed %+v", gone)
		}
		note := driver.OutputRow{TaskID: id, Seq: 2, Attempt: 1, ByteOffset: 12, Dropped: 12, CreatedAt: sec(2)}
		must(t, "output note", ex.OutputNote(ctx, note))
		if _, err := ex.OutputAppend(ctx, driver.OutputRow{TaskID: 999, Attempt: 1, CreatedAt: T0}); err == nil {
			t.Fatal("output of no task was accepted")
		}
		if err := ex.OutputNote(ctx, note); err == nil {
			t.Fatal("a second row at one seq was accepted")
		}
		list, err = ex.OutputList(ctx, driver.OutputListParams{TaskID: id, Limit: 10})
		must(t, "output list", err)
		if len(list) != 3 || list[0].Seq != 2 || list[0].Dropped != 12 || list[0].ByteOffset != 12 || list[1] != n1 || list[2] != a3 {
			t.Fatalf("output after the trim = %+v", list)
		}
		heads, err := ex.OutputHeads(ctx, []int64{id, other, 999})
		must(t, "output heads", err)
		slices.SortFunc(heads, func(a, b driver.OutputHead) int { return int(a.TaskID - b.TaskID) })
		if !slices.Equal(heads, []driver.OutputHead{{TaskID: id, Seq: 4}, {TaskID: other, Seq: 1}}) {
			t.Fatalf("heads %+v", heads)
		}
		if none, err := ex.OutputList(ctx, driver.OutputListParams{TaskID: 999, Limit: 10}); err != nil || len(none) != 0 {
			t.Fatalf("output of no task = %v, %v", none, err)
		}
	})
	t.Run("EvidenceAndDecisions", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		id := insert(t, ex, task("a", stRunning))[0]
		e1 := driver.EvidenceRow{TaskID: id, Attempt: 1, Restart: 0, Revision: 1, Kind: "log", Body: "b", Actor: "w", CreatedAt: sec(1)}
		e2 := driver.EvidenceRow{TaskID: id, Attempt: 2, Restart: 1, Revision: 2, Kind: "workspace", Body: "/tmp/x", Actor: "w2", CreatedAt: sec(2)}
		got1, err := ex.EvidenceInsert(ctx, e1)
		skipUnsupported(t, "evidence insert", err)
		got2, err := ex.EvidenceInsert(ctx, e2)
		must(t, "evidence insert", err)
		if got1.ID == 0 || got2.ID <= got1.ID {
			t.Fatalf("evidence ids %d, %d", got1.ID, got2.ID)
		}
		e1.ID, e2.ID = got1.ID, got2.ID
		if got1 != e1 || got2 != e2 {
			t.Fatalf("evidence returned %+v %+v, want %+v %+v", got1, got2, e1, e2)
		}
		list, err := ex.EvidenceList(ctx, id)
		must(t, "evidence list", err)
		if !slices.Equal(list, []driver.EvidenceRow{e1, e2}) {
			t.Fatalf("evidence list %+v", list)
		}
		d1 := driver.DecisionRow{TaskID: id, Attempt: 1, Restart: 2, Revision: 3, DerivedFromRevision: 2, Kind: "plan", Text: "t", Actor: "w", CreatedAt: sec(3)}
		gotD, err := ex.DecisionInsert(ctx, d1)
		must(t, "decision insert", err)
		d1.ID = gotD.ID
		if gotD != d1 || d1.ID == 0 {
			t.Fatalf("decision returned %+v, want %+v", gotD, d1)
		}
		dl, err := ex.DecisionList(ctx, id)
		must(t, "decision list", err)
		if !slices.Equal(dl, []driver.DecisionRow{d1}) {
			t.Fatalf("decision list %+v", dl)
		}
		if _, err := ex.EvidenceInsert(ctx, driver.EvidenceRow{TaskID: 999, Kind: "k", CreatedAt: T0}); err == nil {
			t.Fatal("evidence of no task was accepted")
		}
		if none, err := ex.EvidenceList(ctx, 999); err != nil || len(none) != 0 {
			t.Fatalf("evidence of no task = %v, %v", none, err)
		}
		if none, err := ex.DecisionList(ctx, 999); err != nil || len(none) != 0 {
			t.Fatalf("decisions of no task = %v, %v", none, err)
		}
	})
	t.Run("Aborts", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		got := insert(t, ex, task("a", stHeld), task("a", stHeld), task("a", stOpen))
		mk := func(task int64, hash string, deadline int) driver.AbortRow {
			return driver.AbortRow{TaskID: task, LeaseTokenHash: hash, Executor: "w", Attempt: 1, Restart: 2,
				RequestedBy: "op", Reason: "r", RequestedAt: T0, DeadlineAt: sec(deadline), Outcome: "abort_pending"}
		}
		a1, err := ex.AbortInsert(ctx, mk(got[0], "h1", 10))
		skipUnsupported(t, "abort insert", err)
		want := mk(got[0], "h1", 10)
		want.ID = a1.ID
		if a1 != want || a1.ID == 0 {
			t.Fatalf("abort returned %+v, want %+v", a1, want)
		}
		a2, _ := ex.AbortInsert(ctx, mk(got[0], "h1", 20)) // a later abort of the same lease
		a3, _ := ex.AbortInsert(ctx, mk(got[0], "h2", 5))
		a4, _ := ex.AbortInsert(ctx, mk(got[1], "", 5)) // names no lease
		resolved := mk(got[1], "h3", 1)
		resolved.Outcome, resolved.ResolvedAt = "abort_confirmed", sec(2)
		a5, err := ex.AbortInsert(ctx, resolved)
		must(t, "abort insert", err)
		if a5.ResolvedAt != sec(2) {
			t.Fatalf("resolved_at %v", a5.ResolvedAt)
		}
		for _, lock := range []driver.Lock{driver.LockNone, driver.LockUpdate} {
			must(t, "abort get", d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				g, err := ex.AbortGet(ctx, driver.AbortGetParams{ID: a2.ID, Lock: lock})
				if err != nil || g != a2 {
					return fmt.Errorf("abort get %d = %+v, %v; want %+v", a2.ID, g, err, a2)
				}
				l, err := ex.AbortFindLatest(ctx, driver.AbortFindLatestParams{TaskID: got[0], LeaseTokenHash: "h1", Lock: lock})
				if err != nil || l != a2 {
					return fmt.Errorf("latest of h1 = %+v, %v; want %+v", l, err, a2)
				}
				// By id, in id order, unknown ids absent; one id alone too.
				for _, c := range []struct{ ids, want []driver.AbortRow }{
					{[]driver.AbortRow{a5, a1, {ID: 999}, a3}, []driver.AbortRow{a1, a3, a5}},
					{[]driver.AbortRow{a4}, []driver.AbortRow{a4}},
					{nil, nil},
				} {
					var ids []int64
					for _, a := range c.ids {
						ids = append(ids, a.ID)
					}
					m, err := ex.AbortGetMany(ctx, driver.AbortGetManyParams{IDs: ids, Lock: lock})
					if err != nil || !slices.Equal(m, c.want) {
						return fmt.Errorf("abort get many %v = %+v, %v; want %+v", ids, m, err, c.want)
					}
				}
				return nil
			}))
		}
		_, err = ex.AbortGet(ctx, driver.AbortGetParams{ID: 999})
		isNoRows(t, "unknown abort", err)
		_, err = ex.AbortFindLatest(ctx, driver.AbortFindLatestParams{TaskID: got[1], LeaseTokenHash: ""})
		isNoRows(t, "abort of no lease", err)
		_, err = ex.AbortFindLatest(ctx, driver.AbortFindLatestParams{TaskID: got[1], LeaseTokenHash: "h1"})
		isNoRows(t, "abort of another task's lease", err)

		list, err := ex.AbortList(ctx, got[0])
		must(t, "abort list", err)
		if !slices.Equal(list, []driver.AbortRow{a1, a2, a3}) {
			t.Fatalf("aborts of %d = %+v", got[0], list)
		}
		latest, err := ex.AbortLatestMany(ctx, []int64{got[2], got[1], got[0]})
		must(t, "latest many", err)
		if !slices.Equal(latest, []driver.AbortRow{a3, a5}) {
			t.Fatalf("latest aborts = %+v, want %+v", latest, []driver.AbortRow{a3, a5})
		}
		due, err := ex.AbortPendingDue(ctx, driver.AbortPendingDueParams{Outcome: "abort_pending", Now: sec(10), Limit: 10})
		must(t, "pending due", err)
		if !slices.Equal(due, []driver.AbortRow{a1, a3, a4}) {
			t.Fatalf("due at 10 = %+v", due)
		}
		if due, _ := ex.AbortPendingDue(ctx, driver.AbortPendingDueParams{Outcome: "abort_pending", Now: sec(10), Limit: 1}); !slices.Equal(due, []driver.AbortRow{a1}) {
			t.Fatalf("due at 10, limit 1 = %+v", due)
		}
		a1.Outcome, a1.ResolvedAt = "abort_unconfirmed", sec(11)
		a5.Outcome, a5.ResolvedAt = "abort_pending", time.Time{} // back to NULL
		n, err := ex.AbortUpdateMany(ctx, []driver.AbortRow{a1, a5, {ID: 999, Outcome: "x"}})
		must(t, "abort update", err)
		if n != 2 {
			t.Fatalf("abort update wrote %d, want 2", n)
		}
		for _, a := range []driver.AbortRow{a1, a5} {
			if g, _ := ex.AbortGet(ctx, driver.AbortGetParams{ID: a.ID}); g != a {
				t.Fatalf("abort %d after update = %+v, want %+v", a.ID, g, a)
			}
		}
		if due, _ := ex.AbortPendingDue(ctx, driver.AbortPendingDueParams{Outcome: "abort_pending", Now: sec(10), Limit: 10}); !slices.Equal(due, []driver.AbortRow{a3, a4, a5}) {
			t.Fatalf("due after update = %+v", due)
		}
		if none, err := ex.AbortLatestMany(ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("latest of no tasks = %v, %v", none, err)
		}
	})
}

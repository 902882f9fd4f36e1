package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/driver"
)

// objectRow is a valid new object row: kind, status, one head version 1,
// created at T0 plus s seconds.
func objectRow(kind, status string, s int) driver.ObjectRow {
	at := T0.Add(time.Duration(s) * time.Second)
	return driver.ObjectRow{Kind: kind, Title: "title of " + kind, Content: []byte(`{"k":"` + kind + `"}`),
		ContentHash: "hash-" + kind, CurrentStatus: status, HeadVersion: 1, Heads: 1, CreatedBy: "maker",
		CreatedAt: at, UpdatedAt: at}
}

// insertObjects inserts rows and returns them with their ids.
func insertObjects(t testing.TB, ex driver.Executor, rows ...driver.ObjectRow) []driver.ObjectRow {
	t.Helper()
	ids, err := ex.ObjectInsertMany(Ctx(t), rows)
	skipUnsupported(t, "object insert", err)
	if len(ids) != len(rows) {
		t.Fatalf("object insert returned %d ids for %d rows", len(ids), len(rows))
	}
	out := slices.Clone(rows)
	for i := range out {
		out[i].ID = ids[i]
	}
	return out
}

// getObjects reads ids without a lock.
func getObjects(t testing.TB, ex driver.Executor, ids ...int64) []driver.ObjectRow {
	t.Helper()
	got, err := ex.ObjectGetMany(Ctx(t), driver.ObjectGetManyParams{IDs: ids})
	must(t, "object get", err)
	return got
}

func objectIDsOf(rows []driver.ObjectRow) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// wantObjects fails the test unless got are want, field for field.
func wantObjects(t testing.TB, what string, got, want []driver.ObjectRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d objects %v, want %d %v", what, len(got), objectIDsOf(got), len(want), objectIDsOf(want))
	}
	for i := range want {
		if d := diffObject(got[i], want[i]); d != "" {
			t.Fatalf("%s: object %d differs in %s:\n got %+v\nwant %+v", what, want[i].ID, d, got[i], want[i])
		}
	}
}

func diffObject(a, b driver.ObjectRow) string {
	switch {
	case a.ID != b.ID:
		return "id"
	case a.Kind != b.Kind || a.Title != b.Title:
		return "kind or title"
	case string(a.Content) != string(b.Content) || a.ContentHash != b.ContentHash:
		return "content"
	case a.CurrentStatus != b.CurrentStatus:
		return "status"
	case a.ClaimedBy != b.ClaimedBy || a.ClaimToken != b.ClaimToken || a.ClaimedAt != b.ClaimedAt:
		return "claim"
	case a.Round != b.Round || a.HeadVersion != b.HeadVersion || a.Heads != b.Heads:
		return "round or heads"
	case a.CreatedBy != b.CreatedBy || a.CreatedAt != b.CreatedAt || a.UpdatedAt != b.UpdatedAt:
		return "creation or update"
	}
	return ""
}

// versionRow is version number of object, with parents, by author at T0.
func versionRow(object, number int64, head bool, parents ...int64) driver.VersionRow {
	return driver.VersionRow{ObjectID: object, Version: number, Parents: parents,
		Content: []byte(fmt.Sprintf(`{"v":%d}`, number)), ContentHash: fmt.Sprintf("h%d", number),
		Author: "author", CreatedAt: T0, IsHead: head}
}

// ascending reports whether ids are positive and strictly ascending.
func ascending(ids []int64) bool {
	for i, id := range ids {
		if id <= 0 || i > 0 && id <= ids[i-1] {
			return false
		}
	}
	return true
}

func versionNumbers(rows []driver.VersionRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Version
	}
	return out
}

// Knowledge checks the knowledge primitives: objects, versions, edges and
// transition logs, their orders, limits, NULL mapping and bulk forms, and
// the row locks of claims on Postgres.
func Knowledge(t *testing.T, newDB NewDB) {
	t.Run("ObjectInsertAndGet", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		full := objectRow("question", "awaiting_research", 0)
		full.Content = []byte(`{"a":[1,2.50],"s":"é 😀 \u003c"}`) // stored byte for byte
		full.ClaimedBy, full.ClaimToken, full.ClaimedAt = "w", "token-hash", T0.Add(1500*time.Microsecond)
		full.Round, full.HeadVersion, full.Heads = 2, 7, 3
		bare := driver.ObjectRow{Kind: "critique", Content: []byte(`{}`), ContentHash: "h", CreatedAt: T0, UpdatedAt: T0}
		rows := insertObjects(t, ex, full, bare, objectRow("claim", "", 1))
		if !ascending(objectIDsOf(rows)) {
			t.Fatalf("ids %v, want ascending in input order", objectIDsOf(rows))
		}
		// Ordered by id whatever the order asked; unknown ids absent.
		got := getObjects(t, ex, rows[2].ID, 424242, rows[0].ID, rows[1].ID, rows[0].ID)
		wantObjects(t, "object get", got, rows)
		if got := getObjects(t, ex); len(got) != 0 {
			t.Fatalf("get of no ids: %+v", got)
		}
		// Zero values: no claim reads as zero (claimed_at NULL), no title "".
		if got[1].ClaimedAt != (time.Time{}) || got[1].ClaimedBy != "" || got[1].Title != "" {
			t.Fatalf("bare object reads %+v", got[1])
		}
		// Inside a transaction, with a lock, and rolled back with it.
		boom := errors.New("boom")
		err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			in := insertObjects(t, ex, objectRow("gone", "", 2))
			locked, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{in[0].ID, rows[0].ID}, Lock: driver.LockUpdate})
			if err != nil {
				return err
			}
			if len(locked) != 2 || locked[1].ID != in[0].ID {
				return fmt.Errorf("locked read in the transaction: %v", objectIDsOf(locked))
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("WithTx = %v, want fn's error", err)
		}
		if all, _ := ex.ObjectList(ctx, driver.ObjectListParams{Limit: 10}); len(all) != 3 {
			t.Fatalf("after a rolled-back insert: %d objects, want 3", len(all))
		}
		if _, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{rows[0].ID}, Lock: driver.LockUpdateSkip}); err == nil {
			t.Fatal("object get with LockUpdateSkip: no error, want a refusal (only LockNone and LockUpdate)")
		}
	})
	t.Run("ObjectExistMany", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("a", "", 0), objectRow("b", "", 0), objectRow("c", "", 0))
		found, err := ex.ObjectExistMany(ctx, []int64{rows[2].ID, 999999, rows[0].ID, rows[2].ID, 0, -1})
		must(t, "object exist", err)
		if fmt.Sprint(found) != fmt.Sprint([]int64{rows[0].ID, rows[2].ID}) {
			t.Fatalf("exist = %v, want %v (ascending, once each)", found, []int64{rows[0].ID, rows[2].ID})
		}
		if found, err := ex.ObjectExistMany(ctx, nil); err != nil || len(found) != 0 {
			t.Fatalf("exist of nothing = %v, %v", found, err)
		}
	})
	t.Run("ObjectUpdateMany", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("a", "s1", 0), objectRow("b", "s1", 0), objectRow("c", "s1", 0))
		later := T0.Add(time.Minute)
		// a: a claim, content not sent (kept); b: a version write with
		// content; c: untouched; and an unknown id, not counted.
		a := rows[0]
		a.Content, a.ContentHash = nil, "ignored"
		a.CurrentStatus, a.ClaimedBy, a.ClaimToken, a.ClaimedAt, a.Round, a.UpdatedAt = "s2", "w", "th", later, 1, later
		b := rows[1]
		b.Content, b.ContentHash, b.HeadVersion, b.Heads, b.UpdatedAt = []byte(`{"new": true}`), "new-hash", 2, 2, later
		b.Kind, b.Title, b.CreatedBy, b.CreatedAt = "changed", "changed", "changed", later // never written
		n, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{a, b, {ID: 999999, Content: []byte(`{}`), UpdatedAt: later}})
		skipUnsupported(t, "object update", err)
		if n != 2 {
			t.Fatalf("object update wrote %d rows, want 2", n)
		}
		wantA := rows[0]
		wantA.CurrentStatus, wantA.ClaimedBy, wantA.ClaimToken, wantA.ClaimedAt, wantA.Round, wantA.UpdatedAt = "s2", "w", "th", later, 1, later
		wantB := rows[1]
		wantB.Content, wantB.ContentHash, wantB.HeadVersion, wantB.Heads, wantB.UpdatedAt = []byte(`{"new": true}`), "new-hash", 2, 2, later
		wantObjects(t, "after the update", getObjects(t, ex, objectIDsOf(rows)...), []driver.ObjectRow{wantA, wantB, rows[2]})
		// Clearing a claim maps back to NULL.
		a = wantA
		a.Content, a.ClaimedBy, a.ClaimToken, a.ClaimedAt = nil, "", "", time.Time{}
		if n, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{a}); err != nil || n != 1 {
			t.Fatalf("release update = %d, %v", n, err)
		}
		wantA.ClaimedBy, wantA.ClaimToken, wantA.ClaimedAt = "", "", time.Time{}
		wantObjects(t, "after the release", getObjects(t, ex, a.ID), []driver.ObjectRow{wantA})
		if got, err := ex.ObjectClaimedBefore(ctx, driver.ObjectClaimedBeforeParams{Before: later.Add(time.Hour)}); err != nil || len(got) != 0 {
			t.Fatalf("released claim still found: %v, %v", objectIDsOf(got), err)
		}
		if n, err := ex.ObjectUpdateMany(ctx, nil); err != nil || n != 0 {
			t.Fatalf("update of nothing = %d, %v", n, err)
		}
	})
	t.Run("ObjectList", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		searchable := objectRow("question", "research", 0)
		searchable.Title, searchable.Content = "Why the SKY is Blue", []byte(`{"k":"Needle"}`)
		rows := insertObjects(t, ex,
			objectRow("question", "research", 0), // 0
			objectRow("claim", "supported", 0),   // 1
			objectRow("question", "critique", 0), // 2
			objectRow("critique", "", 0),         // 3
			objectRow("claim", "research", 0),    // 4
			searchable,                           // 5
		)
		claimed := rows[0]
		claimed.Content, claimed.ClaimedBy, claimed.ClaimToken, claimed.ClaimedAt = nil, "w", "th", T0
		must(t, "claim", ErrOnly(ex.ObjectUpdateMany(ctx, []driver.ObjectRow{claimed})))
		id := func(is ...int) string {
			ids := make([]int64, len(is))
			for i, n := range is {
				ids[i] = rows[n].ID
			}
			return fmt.Sprint(ids)
		}
		for _, c := range []struct {
			name string
			p    driver.ObjectListParams
			want string
		}{
			{"all", driver.ObjectListParams{Limit: 10}, id(0, 1, 2, 3, 4, 5)},
			{"limit", driver.ObjectListParams{Limit: 2}, id(0, 1)},
			{"after", driver.ObjectListParams{After: rows[3].ID, Limit: 10}, id(4, 5)},
			{"unclaimed", driver.ObjectListParams{Unclaimed: true, Limit: 10}, id(1, 2, 3, 4, 5)},
			{"statuses", driver.ObjectListParams{Statuses: []string{"research", "supported"}, Limit: 10}, id(0, 1, 4, 5)},
			{"statuses after, limit", driver.ObjectListParams{Statuses: []string{"research"}, After: rows[0].ID, Limit: 1}, id(4)},
			{"unclaimed of a status", driver.ObjectListParams{Statuses: []string{"research"}, Unclaimed: true, Limit: 10}, id(4, 5)},
			{"statuses and kinds", driver.ObjectListParams{Statuses: []string{"research"}, Kinds: []string{"question"}, Limit: 10}, id(0, 5)},
			{"unclaimed, statuses and kinds", driver.ObjectListParams{Statuses: []string{"research"}, Kinds: []string{"question"}, Unclaimed: true, Limit: 10}, id(5)},
			{"kinds", driver.ObjectListParams{Kinds: []string{"claim", "critique"}, Limit: 10}, id(1, 3, 4)},
			{"kinds unclaimed", driver.ObjectListParams{Kinds: []string{"question"}, Unclaimed: true, Limit: 10}, id(2, 5)},
			{"no status", driver.ObjectListParams{Statuses: []string{""}, Limit: 10}, id(3)},
			{"unknown", driver.ObjectListParams{Kinds: []string{"nope"}, Limit: 10}, id()},
			// Match is lower-case; the stored title and content are matched lower-cased.
			{"match a title", driver.ObjectListParams{Match: "sky is", Limit: 10}, id(5)},
			{"match a content", driver.ObjectListParams{Match: "needle", Limit: 10}, id(5)},
			{"match, statuses and kinds", driver.ObjectListParams{Match: "title of", Statuses: []string{"research"}, Kinds: []string{"question"}, Limit: 10}, id(0)},
			{"match unclaimed", driver.ObjectListParams{Match: "title of q", Unclaimed: true, Limit: 10}, id(2)},
			{"match after, limit", driver.ObjectListParams{Match: "title of", After: rows[1].ID, Limit: 2}, id(2, 3)},
			{"match nothing", driver.ObjectListParams{Match: "zebra", Limit: 10}, id()},
		} {
			got, err := ex.ObjectList(ctx, c.p)
			must(t, c.name, err)
			if fmt.Sprint(objectIDsOf(got)) != c.want {
				t.Errorf("%s: ObjectList(%+v) = %v, want %s", c.name, c.p, objectIDsOf(got), c.want)
			}
		}
		all, err := ex.ObjectList(ctx, driver.ObjectListParams{Limit: 10})
		must(t, "list", err)
		wantObjects(t, "listed rows", all[1:], getObjects(t, ex, objectIDsOf(rows[1:])...))
	})
	t.Run("ObjectClaimable", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("q", "todo", 0), objectRow("q", "other", 0), objectRow("q", "todo", 0),
			objectRow("q", "todo", 0), objectRow("q", "todo", 0))
		held := rows[2]
		held.Content, held.ClaimedBy, held.ClaimToken, held.ClaimedAt = nil, "w", "th", T0
		must(t, "claim", ErrOnly(ex.ObjectUpdateMany(ctx, []driver.ObjectRow{held})))
		got, err := ex.ObjectClaimable(ctx, driver.ObjectClaimableParams{Status: "todo", Limit: 2})
		must(t, "claimable", err)
		if fmt.Sprint(objectIDsOf(got)) != fmt.Sprint([]int64{rows[0].ID, rows[3].ID}) {
			t.Fatalf("claimable = %v, want the two oldest unclaimed of the status %v", objectIDsOf(got), []int64{rows[0].ID, rows[3].ID})
		}
		wantObjects(t, "claimable rows", got, []driver.ObjectRow{rows[0], rows[3]})
		if got, _ := ex.ObjectClaimable(ctx, driver.ObjectClaimableParams{Status: "todo", Limit: 10}); len(got) != 3 {
			t.Fatalf("claimable of todo, limit 10: %v", objectIDsOf(got))
		}
	})
	t.Run("ObjectClaimableSkipsLocked", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		if d.Dialect() != "postgres" {
			t.Skip("SQLite has one writer: a claim never meets another's lock")
		}
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("q", "todo", 0), objectRow("q", "todo", 0), objectRow("q", "todo", 0))
		other := db.Open(t)
		err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			mine, err := ex.ObjectClaimable(ctx, driver.ObjectClaimableParams{Status: "todo", Limit: 1})
			if err != nil || len(mine) != 1 || mine[0].ID != rows[0].ID {
				return fmt.Errorf("first claimer: %v, %v", objectIDsOf(mine), err)
			}
			// Another connection, while this one holds the oldest: it skips it
			// without waiting (a short deadline would fail a wait).
			wait, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return other.WithTx(wait, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
				theirs, err := ex.ObjectClaimable(ctx, driver.ObjectClaimableParams{Status: "todo", Limit: 5})
				if err != nil {
					return err
				}
				if fmt.Sprint(objectIDsOf(theirs)) != fmt.Sprint([]int64{rows[1].ID, rows[2].ID}) {
					return fmt.Errorf("second claimer got %v, want the rows the first does not hold", objectIDsOf(theirs))
				}
				stale, err := ex.ObjectClaimedBefore(ctx, driver.ObjectClaimedBeforeParams{Before: T0.Add(time.Hour)})
				if err != nil || len(stale) != 0 {
					return fmt.Errorf("claimed before: %v, %v", objectIDsOf(stale), err)
				}
				return nil
			})
		})
		must(t, "two claimers", err)
	})
	t.Run("ObjectLockLetsReferencesIn", func(t *testing.T) {
		t.Parallel()
		d, db := open(t, newDB)
		if d.Dialect() != "postgres" {
			t.Skip("SQLite has one writer: there are no row locks")
		}
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("q", "todo", 0), objectRow("c", "", 0))
		other := db.Open(t)
		err := d.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			if _, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{rows[0].ID}, Lock: driver.LockUpdate}); err != nil {
				return err
			}
			// An edge to the held object is written by another connection at
			// once: the lock is FOR NO KEY UPDATE.
			wait, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := other.Executor().EdgeInsertMany(wait, []driver.EdgeRow{{Src: rows[1].ID, Dst: rows[0].ID, BaseType: "cites", CreatedAt: T0}})
			return err
		})
		must(t, "edge to a locked object", err)
	})
	t.Run("ObjectClaimedBefore", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		rows := insertObjects(t, ex, objectRow("q", "s", 0), objectRow("q", "s", 0), objectRow("q", "s", 0), objectRow("q", "s", 0))
		var claims []driver.ObjectRow
		for i, at := range []time.Duration{2 * time.Minute, time.Minute, time.Minute + time.Microsecond} {
			c := rows[i]
			c.Content, c.ClaimedBy, c.ClaimToken, c.ClaimedAt = nil, "w", fmt.Sprint("t", i), T0.Add(at)
			claims = append(claims, c)
		}
		must(t, "claims", ErrOnly(ex.ObjectUpdateMany(ctx, claims)))
		got, err := ex.ObjectClaimedBefore(ctx, driver.ObjectClaimedBeforeParams{Before: T0.Add(time.Minute)})
		must(t, "claimed before", err)
		if fmt.Sprint(objectIDsOf(got)) != fmt.Sprint([]int64{rows[1].ID}) {
			t.Fatalf("claimed at or before T0+1m: %v, want %v (inclusive, microseconds apart)", objectIDsOf(got), []int64{rows[1].ID})
		}
		got, _ = ex.ObjectClaimedBefore(ctx, driver.ObjectClaimedBeforeParams{Before: T0.Add(time.Hour)})
		if fmt.Sprint(objectIDsOf(got)) != fmt.Sprint(objectIDsOf(rows[:3])) {
			t.Fatalf("claimed before T0+1h: %v, want %v (ascending, unclaimed left out)", objectIDsOf(got), objectIDsOf(rows[:3]))
		}
	})
	t.Run("Versions", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		objs := insertObjects(t, ex, objectRow("a", "", 0), objectRow("b", "", 0))
		a, b := objs[0].ID, objs[1].ID
		// Both objects have a version 1; a forks (2 and 3 from 1) and merges.
		in := []driver.VersionRow{versionRow(a, 1, false), versionRow(b, 1, true), versionRow(a, 2, true, 1), versionRow(a, 3, true, 1)}
		in[1].Content, in[1].Author, in[1].CreatedAt = []byte(` {"b" : "é"} `), "", T0.Add(1500*time.Microsecond)
		ids, err := ex.VersionInsertMany(ctx, in)
		skipUnsupported(t, "version insert", err)
		if len(ids) != 4 || !ascending(ids) {
			t.Fatalf("version ids %v, want four ascending in input order", ids)
		}
		all, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: a})
		must(t, "version list", err)
		if fmt.Sprint(versionNumbers(all)) != "[1 2 3]" {
			t.Fatalf("versions of a: %v, want [1 2 3]", versionNumbers(all))
		}
		for i, want := range []driver.VersionRow{in[0], in[2], in[3]} {
			want.ID = []int64{ids[0], ids[2], ids[3]}[i]
			if got := all[i]; got.ID != want.ID || got.ObjectID != a || got.Version != want.Version ||
				fmt.Sprint(got.Parents) != fmt.Sprint(want.Parents) || len(got.Parents) != len(want.Parents) ||
				string(got.Content) != string(want.Content) || got.ContentHash != want.ContentHash ||
				got.Author != want.Author || got.CreatedAt != want.CreatedAt || got.IsHead != want.IsHead {
				t.Fatalf("version %d of a reads %+v, want %+v", want.Version, got, want)
			}
		}
		heads, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: a, HeadsOnly: true})
		must(t, "heads", err)
		if fmt.Sprint(versionNumbers(heads)) != "[2 3]" {
			t.Fatalf("heads of a: %v", versionNumbers(heads))
		}
		bs, _ := ex.VersionList(ctx, driver.VersionListParams{ObjectID: b})
		if len(bs) != 1 || string(bs[0].Content) != ` {"b" : "é"} ` || bs[0].Author != "" || bs[0].CreatedAt != in[1].CreatedAt || len(bs[0].Parents) != 0 {
			t.Fatalf("version of b reads %+v", bs)
		}
		// One version per number of an object.
		if _, err := ex.VersionInsertMany(ctx, []driver.VersionRow{versionRow(a, 2, true, 1)}); !errors.Is(err, driver.ErrUniqueViolation) {
			t.Fatalf("a second version 2 of a: err = %v, want ErrUniqueViolation", err)
		}
		// Unset heads counts the heads it changed, of that object only.
		n, err := ex.VersionUnsetHeads(ctx, driver.VersionUnsetHeadsParams{ObjectID: a, Versions: []int64{1, 2, 3, 9}})
		must(t, "unset heads", err)
		if n != 2 {
			t.Fatalf("unset heads of a [1 2 3 9] changed %d, want 2 (1 is no head, 9 no version)", n)
		}
		if n, _ := ex.VersionUnsetHeads(ctx, driver.VersionUnsetHeadsParams{ObjectID: a, Versions: []int64{2}}); n != 0 {
			t.Fatalf("unset of a former head changed %d", n)
		}
		// No versions is nothing to write: not even in a read-only
		// transaction, where a statement that writes would fail.
		err = d.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
			n, err := ex.VersionUnsetHeads(ctx, driver.VersionUnsetHeadsParams{ObjectID: a})
			if err == nil && n != 0 {
				err = fmt.Errorf("changed %d", n)
			}
			return err
		})
		must(t, "unset of no heads", err)
		if heads, _ := ex.VersionList(ctx, driver.VersionListParams{ObjectID: b, HeadsOnly: true}); len(heads) != 1 {
			t.Fatalf("unsetting heads of a changed b: heads %v", versionNumbers(heads))
		}
		must(t, "merge", ErrOnly(ex.VersionInsertMany(ctx, []driver.VersionRow{versionRow(a, 4, true, 2, 3)})))
		heads, _ = ex.VersionList(ctx, driver.VersionListParams{ObjectID: a, HeadsOnly: true})
		if len(heads) != 1 || heads[0].Version != 4 || fmt.Sprint(heads[0].Parents) != "[2 3]" {
			t.Fatalf("heads after the merge: %+v", heads)
		}
		if none, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: 424242}); err != nil || len(none) != 0 {
			t.Fatalf("versions of no object: %v, %v", none, err)
		}
	})
	t.Run("ForkList", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		var rows []driver.ObjectRow
		for i := range 5 {
			r := objectRow(fmt.Sprint("o", i), "", 0)
			if i != 1 && i != 3 {
				r.Heads = 2
			}
			rows = append(rows, r)
		}
		rows = insertObjects(t, ex, rows...)
		var vs []driver.VersionRow
		for i, r := range rows {
			vs = append(vs, versionRow(r.ID, 1, i == 1 || i == 3))
			if i != 1 && i != 3 {
				// Inserted out of order: the heads come back ascending.
				vs = append(vs, versionRow(r.ID, 3, true, 1), versionRow(r.ID, 2, true, 1))
			}
		}
		must(t, "versions", ErrOnly(ex.VersionInsertMany(ctx, vs)))
		for _, c := range []struct {
			p    driver.ForkListParams
			want []int
		}{
			{driver.ForkListParams{Limit: 10}, []int{0, 2, 4}},
			{driver.ForkListParams{Limit: 2}, []int{0, 2}},
			{driver.ForkListParams{After: rows[0].ID, Limit: 10}, []int{2, 4}},
			{driver.ForkListParams{After: rows[4].ID, Limit: 10}, nil},
		} {
			got, err := ex.ForkList(ctx, c.p)
			must(t, "fork list", err)
			var want []driver.ForkRow
			for _, i := range c.want {
				want = append(want, driver.ForkRow{ObjectID: rows[i].ID, Heads: []int64{2, 3}})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ForkList(%+v) = %v, want %v", c.p, got, want)
			}
		}
	})
	t.Run("Edges", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		o := objectIDsOf(insertObjects(t, ex, objectRow("a", "", 0), objectRow("b", "", 0), objectRow("c", "", 0)))
		w := -0.25
		in := []driver.EdgeRow{
			{Src: o[0], Dst: o[1], BaseType: "depends_on", SemanticType: "supports", Weight: &w, CreatedAt: T0},
			{Src: o[2], Dst: o[0], BaseType: "relates_to", CreatedAt: T0.Add(time.Microsecond)},
			{Src: o[1], Dst: o[2], BaseType: "depends_on", SemanticType: "refutes", CreatedAt: T0},
		}
		ids, err := ex.EdgeInsertMany(ctx, in)
		skipUnsupported(t, "edge insert", err)
		if len(ids) != 3 || !ascending(ids) {
			t.Fatalf("edge ids %v, want three ascending in input order", ids)
		}
		for i := range in {
			in[i].ID = ids[i]
		}
		show := func(es []driver.EdgeRow) string {
			var b strings.Builder
			for _, e := range es {
				ws := "NULL"
				if e.Weight != nil {
					ws = fmt.Sprint(*e.Weight)
				}
				fmt.Fprintf(&b, "[%d %d>%d %s/%s w=%s %s]", e.ID, e.Src, e.Dst, e.BaseType, e.SemanticType, ws, e.CreatedAt.Format(time.RFC3339Nano))
			}
			return b.String()
		}
		// The edges at either end of the objects, each once (in[0] joins
		// o[0] and o[1]), ascending by id; unknown ids add none.
		for _, c := range []struct {
			ids  []int64
			want []driver.EdgeRow
		}{
			{[]int64{o[0]}, in[:2]},
			{[]int64{o[1]}, []driver.EdgeRow{in[0], in[2]}},
			{[]int64{o[1], o[0], 424242}, in},
			{[]int64{o[2], o[2]}, in[1:]},
			{[]int64{424242}, nil},
			{nil, nil},
		} {
			of, err := ex.EdgeListOfMany(ctx, c.ids)
			must(t, "edges of", err)
			if show(of) != show(c.want) {
				t.Errorf("EdgeListOfMany(%v):\n %s\nwant %s", c.ids, show(of), show(c.want))
			}
		}
		for _, c := range []struct {
			p    driver.EdgeListParams
			want []driver.EdgeRow
		}{
			{driver.EdgeListParams{Limit: 10}, in},
			{driver.EdgeListParams{Limit: 2}, in[:2]},
			{driver.EdgeListParams{After: ids[0], Limit: 10}, in[1:]},
			{driver.EdgeListParams{After: ids[2], Limit: 10}, nil},
		} {
			got, err := ex.EdgeList(ctx, c.p)
			must(t, "edge list", err)
			if show(got) != show(c.want) {
				t.Errorf("EdgeList(%+v) =\n %s\nwant %s", c.p, show(got), show(c.want))
			}
		}
		// An edge to no object is refused by the foreign key, and the batch
		// writes none of its edges.
		if _, err := ex.EdgeInsertMany(ctx, []driver.EdgeRow{{Src: o[0], Dst: o[1], BaseType: "x", CreatedAt: T0},
			{Src: o[0], Dst: 424242, BaseType: "x", CreatedAt: T0}}); err == nil || errors.Is(err, driver.ErrUniqueViolation) {
			t.Fatalf("edge to a missing object: err = %v, want a foreign key violation", err)
		}
		if got, _ := ex.EdgeList(ctx, driver.EdgeListParams{Limit: 10}); len(got) != 3 {
			t.Fatalf("after the refused batch: %d edges, want 3", len(got))
		}
	})
	t.Run("TransitionLog", func(t *testing.T) {
		t.Parallel()
		d, _ := open(t, newDB)
		ex, ctx := d.Executor(), Ctx(t)
		o := objectIDsOf(insertObjects(t, ex, objectRow("q", "a", 0), objectRow("r", "", 0)))
		in := []driver.TransitionRow{
			{ObjectID: o[0], TS: T0, Agent: "op", Action: "created", TransitionedTo: "a", ContentHash: "h1"},
			{ObjectID: o[1], TS: T0, Action: "noted", ContentHash: "h"},
			{ObjectID: o[0], TS: T0.Add(time.Minute), Agent: "critic", Action: "completed", TransitionedTo: "b",
				ReasoningNodeID: o[1], ContentHash: "h2", Round: 1},
			// Same time: the seq orders it.
			{ObjectID: o[0], TS: T0.Add(time.Minute), Agent: "critic", Action: "disputed", TransitionedTo: "c", ContentHash: "h2", Round: 1},
		}
		err := ex.TransitionInsertMany(ctx, in)
		skipUnsupported(t, "transition insert", err)
		got, err := ex.TransitionListMany(ctx, []int64{o[0]})
		must(t, "transition list", err)
		want := []driver.TransitionRow{in[0], in[2], in[3]}
		if len(got) != 3 || !(got[0].Seq > 0 && got[1].Seq > got[0].Seq && got[2].Seq > got[1].Seq) {
			t.Fatalf("log of %d: %+v, want 3 entries with ascending seqs", o[0], got)
		}
		for i := range want {
			want[i].Seq = got[i].Seq
			if got[i] != want[i] {
				t.Fatalf("entry %d reads %+v, want %+v", i, got[i], want[i])
			}
		}
		other, _ := ex.TransitionListMany(ctx, []int64{o[1]})
		if len(other) != 1 || other[0].ReasoningNodeID != 0 || other[0].Agent != "" {
			t.Fatalf("log of %d: %+v", o[1], other)
		}
		// The logs of several objects: by object, each oldest first, each
		// entry once; unknown ids add none.
		for _, ids := range [][]int64{{o[1], o[0], 424242}, {o[0], o[1], o[0]}} {
			both, err := ex.TransitionListMany(ctx, ids)
			must(t, "transition list many", err)
			var seqs []int64
			for _, r := range both {
				seqs = append(seqs, r.Seq)
			}
			if wantSeqs := []int64{got[0].Seq, got[1].Seq, got[2].Seq, other[0].Seq}; fmt.Sprint(seqs) != fmt.Sprint(wantSeqs) ||
				both[3] != other[0] {
				t.Fatalf("logs of %v: seqs %v, want %v (o[0]'s log, then o[1]'s)", ids, seqs, wantSeqs)
			}
		}
		for _, ids := range [][]int64{{424242}, nil} {
			if got, err := ex.TransitionListMany(ctx, ids); err != nil || len(got) != 0 {
				t.Fatalf("logs of %v: %+v, %v; want none", ids, got, err)
			}
		}
	})
}

package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// setLimit sets a limit through s, failing t on an error.
func setLimit(t *testing.T, s *backend.Backend, name, pattern string, max int) cks.Limit {
	t.Helper()
	l, err := s.Tasks.SetLimit(context.Background(), ledger.SetLimitParams{
		LimitInput: cks.LimitInput{Name: name, Pattern: pattern, MaxRunning: max}, Actor: "ops"})
	if err != nil {
		t.Fatalf("set limit %s: %v", name, err)
	}
	return l
}

// ids are the ids of claimed tasks, in claim order.
func ids(ts []cks.ClaimedTask) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestConcurrencyLimit (both backends, two handles on one database as two
// hubs): a claim never takes a task whose key is at its limit, counting the
// tasks other hubs hold; it takes the tasks of other keys behind a capped
// one instead (no head-of-line blocking); a prefix limit caps each key it
// matches on its own, and an exact limit is more specific than a prefix;
// the end of an attempt frees its place and wakes a waiting claim; raising
// a cap and deleting a limit free tasks at once; list_limits counts the
// holders per key.
func TestConcurrencyLimit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s, hub2 := open(t), open(t)
		ctx := context.Background()
		claim := func(on *backend.Backend, n int) []cks.ClaimedTask {
			t.Helper()
			got, err := on.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: n, Lease: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		setLimit(t, s, "openai", "openai", 2)
		setLimit(t, s, "users", "user:*", 1)
		setLimit(t, s, "vip", "user:vip", 2)

		var openai []cks.Task
		for range 4 { // first in claim order: the keys that cap
			openai = append(openai, backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 9, ConcurrencyKeys: []string{"openai"}}))
		}
		a1 := backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"user:a", "openai"}})
		a2 := backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"user:a"}})
		b1 := backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"user:b"}})
		vip1 := backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"user:vip"}})
		vip2 := backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"user:vip"}})
		free := backendtest.MustEnqueue(t, s, cks.NewTask{ConcurrencyKeys: []string{"nolimit"}})
		plain := backendtest.MustEnqueue(t, s, cks.NewTask{})

		// One claim of many: two openai tasks (the cap), then past the
		// capped ones a1 is passed over (openai is full), a2 takes user:a,
		// b1 user:b, both vip tasks (the exact limit's cap of 2, not the
		// prefix's 1), the task of a key no limit matches, and the plain.
		got := claim(hub2, 20)
		want := []int64{openai[0].ID, openai[1].ID, a2.ID, b1.ID, vip1.ID, vip2.ID, free.ID, plain.ID}
		if fmt.Sprint(ids(got)) != fmt.Sprint(want) {
			t.Fatalf("claimed %v, want %v", ids(got), want)
		}
		if got[0].ConcurrencyKeys[0] != "openai" {
			t.Fatalf("claimed task's keys %q", got[0].ConcurrencyKeys)
		}
		if more := claim(s, 20); len(more) != 0 {
			t.Fatalf("the other hub claimed %v with every key at its cap", ids(more))
		}

		st, err := s.Tasks.Limits(ctx)
		if err != nil || len(st.Limits) != 3 {
			t.Fatalf("limits: %+v, %v", st, err)
		}
		byName := map[string]cks.LimitStatus{}
		for _, l := range st.Limits {
			byName[l.Name] = l
		}
		if o := byName["openai"]; o.Held != 1 || o.Saturated != 1 || len(o.Keys) != 1 || o.Keys[0] != (cks.KeyRunning{Key: "openai", Running: 2}) {
			t.Fatalf("openai's status: %+v", o)
		}
		if u := byName["users"]; u.Held != 2 || u.Saturated != 2 {
			t.Fatalf("users' status: %+v (user:a and user:b held once each, vip under its own limit)", u)
		}
		if v := byName["vip"]; v.Held != 1 || v.Keys[0].Running != 2 {
			t.Fatalf("vip's status: %+v", v)
		}

		// The end of an openai attempt frees one place: a waiting claim
		// on the other hub gets the next openai task.
		waiting := waitingClaim(ctx, s, ledger.ClaimParams{Worker: "waiter", N: 5, Wait: ledger.MaxClaimWait, Lease: time.Hour})
		waitfor.Until(t, "the claim waiting", func() bool { return s.Tasks.ClaimsWaiting() == 1 })
		if _, err := hub2.Tasks.Complete(ctx, got[0].ID, got[0].LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		r := answer(t, "the waiter of a freed key", waiting)
		if r.err != nil || fmt.Sprint(ids(r.tasks)) != fmt.Sprint([]int64{openai[2].ID}) {
			t.Fatalf("waiter: %v, %v; want task %d", ids(r.tasks), r.err, openai[2].ID)
		}

		// Raising the cap frees one more at once; deleting the limit of
		// users frees a1's user:a, but openai is full again.
		setLimit(t, hub2, "openai", "openai", 3)
		if got := claim(s, 5); fmt.Sprint(ids(got)) != fmt.Sprint([]int64{openai[3].ID}) {
			t.Fatalf("after raising the cap: %v, want %d", ids(got), openai[3].ID)
		}
		if d, err := hub2.Tasks.DeleteLimit(ctx, "openai"); err != nil || !d.Deleted {
			t.Fatalf("delete: %+v, %v", d, err)
		}
		if got := claim(s, 5); len(got) != 0 {
			t.Fatalf("a1 claimed %v while user:a is held at its cap", ids(got))
		}
		if d, err := hub2.Tasks.DeleteLimit(ctx, "users"); err != nil || !d.Deleted {
			t.Fatalf("delete: %+v, %v", d, err)
		}
		if got := claim(s, 5); fmt.Sprint(ids(got)) != fmt.Sprint([]int64{a1.ID}) {
			t.Fatalf("after deleting the limits: %v, want %d", ids(got), a1.ID)
		}
		if d, err := hub2.Tasks.DeleteLimit(ctx, "users"); err != nil || d.Deleted {
			t.Fatalf("second delete: %+v, %v; want deleted false", d, err)
		}
	})
}

// TestLimitRefusals (both backends): set_limit refuses a bad name, pattern
// or cap with a FieldError naming the field, and a pattern another limit
// has; create_task refuses bad keys; nothing is written.
func TestLimitRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		ctx := context.Background()
		setLimit(t, s, "openai", "openai:*", 2)
		for _, c := range []struct {
			in    cks.LimitInput
			field string
		}{
			{cks.LimitInput{Name: "", Pattern: "x", MaxRunning: 1}, "name"},
			{cks.LimitInput{Name: "a/b", Pattern: "x", MaxRunning: 1}, "name"},
			{cks.LimitInput{Name: "a", Pattern: "", MaxRunning: 1}, "pattern"},
			{cks.LimitInput{Name: "a", Pattern: "a*b", MaxRunning: 1}, "pattern"},
			{cks.LimitInput{Name: "a", Pattern: "**", MaxRunning: 1}, "pattern"},
			{cks.LimitInput{Name: "a", Pattern: "has space", MaxRunning: 1}, "pattern"},
			{cks.LimitInput{Name: "a", Pattern: strings.Repeat("k", 10<<10), MaxRunning: 1}, "pattern"},
			{cks.LimitInput{Name: "a", Pattern: "x", MaxRunning: 0}, "max_running"},
			{cks.LimitInput{Name: "a", Pattern: "x", MaxRunning: -3}, "max_running"},
			{cks.LimitInput{Name: "a", Pattern: "x", Starts: 3}, "interval"},
			{cks.LimitInput{Name: "a", Pattern: "x", Starts: 3, Interval: "500ms"}, "interval"},
			{cks.LimitInput{Name: "a", Pattern: "x", Starts: 3, Interval: "soon"}, "interval"},
			{cks.LimitInput{Name: "a", Pattern: "x", MaxRunning: 1, Interval: "1m"}, "starts"},
			{cks.LimitInput{Name: "a", Pattern: "x", Starts: -1, Interval: "1m"}, "starts"},
			{cks.LimitInput{Name: "a", Pattern: "openai:*", MaxRunning: 1}, "pattern"}, // openai's
		} {
			_, err := s.Tasks.SetLimit(ctx, ledger.SetLimitParams{LimitInput: c.in, Actor: "ops"})
			if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != c.field {
				t.Errorf("set_limit %+v: %v, want a FieldError on %s", c.in, err, c.field)
			}
		}
		for _, keys := range [][]string{{"a", "b", "c", "d", "e"}, {""}, {"has space"}, {"star*"}, {strings.Repeat("k", 10<<10)}} {
			_, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "t", ConcurrencyKeys: keys})
			if fe, ok := errors.AsType[*cks.FieldError](err); !ok || fe.Field != "concurrency_keys" {
				t.Errorf("create with keys %.40q: %v, want a FieldError on concurrency_keys", keys, err)
			}
		}
		st, err := s.Tasks.Limits(ctx)
		if err != nil || len(st.Limits) != 1 || st.Limits[0].Pattern != "openai:*" || st.Limits[0].MaxRunning != 2 {
			t.Fatalf("limits after the refusals: %+v, %v", st, err)
		}
		if n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{}); err != nil || n != 0 {
			t.Fatalf("tasks after the refusals: %d, %v", n, err)
		}
	})
}

// TestConcurrencyLimitExact (both backends; three hubs on one database,
// four workers each): many workers claim, hold and complete tasks under
// tight limits; no key is ever held past its cap — neither as the workers
// count their own tasks (a lower bound of the holders: counted after the
// claim committed, uncounted before the completion begins) nor as sampled
// from the database (list_limits) throughout — and every task completes
// exactly once.
func TestConcurrencyLimitExact(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		hubs := []*backend.Backend{open(t), open(t), open(t)}
		ctx := context.Background()
		caps := map[string]int{"shared": 3}
		setLimit(t, hubs[0], "shared", "shared", 3)
		setLimit(t, hubs[0], "k", "k:*", 2)
		const nKeys, nTasks = 5, 120
		for i := range nKeys {
			caps[fmt.Sprintf("k:%d", i)] = 2
		}
		for i := range nTasks {
			keys := []string{fmt.Sprintf("k:%d", i%nKeys)}
			if i%3 == 0 {
				keys = append(keys, "shared")
			}
			backendtest.MustEnqueue(t, hubs[i%3], cks.NewTask{ConcurrencyKeys: keys})
		}

		var (
			mu       sync.Mutex
			counting = map[string]int{}
			maxSeen  = map[string]int{}
			done     atomic.Int64
			errs     = make(chan error, 64)
			wg       sync.WaitGroup
		)
		hold := func(keys []string, d int) {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				counting[k] += d
				maxSeen[k] = max(maxSeen[k], counting[k])
			}
		}
		for h, hub := range hubs {
			for w := range 4 {
				wg.Go(func() {
					for done.Load() < nTasks {
						got, err := hub.Tasks.Claim(ctx, ledger.ClaimParams{Worker: fmt.Sprintf("h%dw%d", h, w), N: 1 + w%2,
							Lease: time.Hour, Wait: 200 * time.Millisecond})
						if err != nil {
							errs <- err
							return
						}
						for _, c := range got {
							hold(c.ConcurrencyKeys, 1)
							runtime.Gosched()
							hold(c.ConcurrencyKeys, -1)
							if _, err := hub.Tasks.Complete(ctx, c.ID, c.LeaseToken, false, "done"); err != nil {
								errs <- err
								return
							}
							done.Add(1)
						}
					}
				})
			}
		}
		sampled := map[string]int{}
		samples := 0
		for done.Load() < nTasks && len(errs) == 0 {
			st, err := hubs[samples%3].Tasks.Limits(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range st.Limits {
				for _, k := range l.Keys {
					sampled[k.Key] = max(sampled[k.Key], k.Running)
				}
			}
			samples++
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for k, c := range caps {
			if maxSeen[k] > c || sampled[k] > c {
				t.Errorf("key %s: %d held at once by the workers' count, %d sampled in %d reads of the database; the cap is %d",
					k, maxSeen[k], sampled[k], samples, c)
			}
		}
		n, err := hubs[0].Tasks.CountTasks(ctx, cks.TaskFilter{States: []cks.TaskState{cks.TaskCompleted}})
		if err != nil || n != nTasks || done.Load() != nTasks {
			t.Fatalf("completed: %d in the ledger, %d by the workers, %v; want %d", n, done.Load(), err, nTasks)
		}
		t.Logf("max held per key (workers, sampled over %d reads): %v, %v", samples, maxSeen, sampled)
	})
}

// TestRateLimit (both backends, two handles on one database as two hubs,
// one fake clock): a limit of 3 starts a minute lets 3 tasks of a key be
// claimed in any minute, across hubs — a fourth is not claimed even with
// every attempt done, while a task of another key is; the window slides
// (at the first start plus the interval exactly, the next three are
// claimable); a claim waiting for the key is answered when the budget
// frees, by the waiting room's timer (no notification comes then); over a
// steady backlog every window is used to the full; list_limits counts the
// starts in the window.
func TestRateLimit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s, hub2 := open(t, driver.WithClock(c)), open(t, driver.WithClock(c))
		ctx := context.Background()
		if _, err := s.Tasks.SetLimit(ctx, ledger.SetLimitParams{Actor: "ops",
			LimitInput: cks.LimitInput{Name: "api", Pattern: "api", Starts: 3, Interval: "1m"}}); err != nil {
			t.Fatal(err)
		}
		var api []cks.Task
		for range 20 {
			api = append(api, backendtest.MustEnqueue(t, s, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"api"}}))
		}
		other := backendtest.MustEnqueue(t, s, cks.NewTask{ConcurrencyKeys: []string{"other"}})
		claimed := 0
		claimDone := func(on *backend.Backend, want int) []int64 {
			t.Helper()
			got, err := on.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 10, Lease: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			var apiIDs []int64
			for _, g := range got {
				if g.ID != other.ID {
					apiIDs = append(apiIDs, g.ID)
				}
				if _, err := on.Tasks.Complete(ctx, g.ID, g.LeaseToken, false, "done"); err != nil {
					t.Fatal(err)
				}
			}
			if len(apiIDs) != want {
				t.Fatalf("at %s: claimed %d tasks of api, want %d", c.Now().Sub(backendtest.T0), len(apiIDs), want)
			}
			claimed += len(apiIDs)
			return apiIDs
		}
		got, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 10, Lease: time.Hour})
		if err != nil || len(got) != 4 || got[3].ID != other.ID {
			t.Fatalf("first claim: %v, %v; want three of api and the other key's task", ids(got), err)
		}
		for _, g := range got {
			if _, err := s.Tasks.Complete(ctx, g.ID, g.LeaseToken, false, "done"); err != nil {
				t.Fatal(err)
			}
		}
		claimed = 3
		claimDone(hub2, 0) // every attempt ended: the rate, not a cap, holds them
		st, err := hub2.Tasks.Limits(ctx)
		if err != nil || len(st.Limits) != 1 || st.Limits[0].Interval != "1m" || st.Limits[0].Saturated != 1 ||
			len(st.Limits[0].Keys) != 1 || st.Limits[0].Keys[0] != (cks.KeyRunning{Key: "api", Started: 3}) {
			t.Fatalf("limits: %+v, %v", st, err)
		}
		c.Advance(time.Minute - time.Millisecond)
		claimDone(s, 0)

		// A waiting claim on the other hub: its timer is the budget's.
		armed := c.Armed()
		done := waitingClaim(ctx, hub2, ledger.ClaimParams{Worker: "waiter", N: 10, Wait: ledger.MaxClaimWait, Lease: time.Hour})
		if err := armedWithin(c, armed+2); err != nil {
			t.Fatalf("the claim's deadline and the room's timer for the rate: %v", err)
		}
		select {
		case r := <-done:
			t.Fatalf("claim answered before the budget freed: %v, %v", ids(r.tasks), r.err)
		default:
		}
		c.Advance(time.Millisecond)
		r := answer(t, "the waiter of the rate-limited key", done)
		if r.err != nil || len(r.tasks) != 3 {
			t.Fatalf("waiter: %v, %v; want 3 tasks of api", ids(r.tasks), r.err)
		}
		claimed += 3
		for _, g := range r.tasks {
			if _, err := hub2.Tasks.Complete(ctx, g.ID, g.LeaseToken, false, "done"); err != nil {
				t.Fatal(err)
			}
		}

		// A steady backlog: each minute, claims on both hubs take exactly
		// the three starts the window frees.
		for range 4 {
			claimDone(s, 0)
			c.Advance(time.Minute)
			claimDone(hub2, 3)
			claimDone(s, 0)
		}
		if claimed != 18 {
			t.Fatalf("%d tasks of api claimed over 6 windows, want 18", claimed)
		}
	})
}

// TestLimitBindsAHubThatHasNotReadIt (both backends, two hubs, one fake
// clock): a hub whose last look found no limit (it looks again a second
// later) claims no task with keys once another hub has set a limit — the
// claim statement itself takes a keyed task only while no limit exists —
// while it still claims the tasks without keys; a second later it reads
// the limit and claims under it.
func TestLimitBindsAHubThatHasNotReadIt(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		a, stale := open(t, driver.WithClock(c)), open(t, driver.WithClock(c))
		ctx := context.Background()
		claim := func(on *backend.Backend) []cks.ClaimedTask {
			t.Helper()
			got, err := on.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", N: 5, Lease: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := claim(stale); len(got) != 0 { // its look: no limit
			t.Fatalf("claimed %v from an empty ledger", ids(got))
		}
		setLimit(t, a, "gpu", "gpu", 1)
		first := backendtest.MustEnqueue(t, a, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"gpu"}})
		second := backendtest.MustEnqueue(t, a, cks.NewTask{Priority: 5, ConcurrencyKeys: []string{"gpu"}})
		plain := backendtest.MustEnqueue(t, a, cks.NewTask{})
		if got := claim(a); len(got) != 2 || got[0].ID != first.ID || got[1].ID != plain.ID {
			t.Fatalf("the limit's hub claimed %v, want %d and %d", ids(got), first.ID, plain.ID)
		}
		backendtest.MustEnqueue(t, a, cks.NewTask{}) // work without keys for the stale hub
		if got := claim(stale); len(got) != 1 || len(got[0].ConcurrencyKeys) != 0 {
			t.Fatalf("the hub that has not read the limit claimed %v, want only the task without keys", ids(got))
		}
		c.Advance(time.Second) // it looks again
		if got := claim(stale); len(got) != 0 {
			t.Fatalf("claimed %v with gpu at its cap", ids(got))
		}
		if _, err := a.Tasks.Cancel(ctx, first.ID, "ops", "freed"); err != nil {
			t.Fatal(err)
		}
		if got := claim(stale); len(got) != 1 || got[0].ID != second.ID {
			t.Fatalf("after the place freed: %v, want %d", ids(got), second.ID)
		}
	})
}

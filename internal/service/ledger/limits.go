package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Concurrency limits (issue 42 item 1; docs/flow-control.md#limits): a
// task's concurrency keys, the limits on them, and the keyed claim that
// never hands out a task while one of its keys holds its cap.

// Holding are the states in which a task holds its concurrency keys: the
// states of a running attempt.
var Holding = [...]cks.TaskState{cks.TaskClaimed, cks.TaskRunning}

// holdsKeys reports whether a task in state st holds its keys.
func holdsKeys(st cks.TaskState) bool { return slices.Contains(Holding[:], st) }

// encodeKeys is keys as the column stores them: a JSON array, "" for none.
func encodeKeys(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	b, err := json.Marshal(keys)
	if err != nil {
		panic(fmt.Sprintf("ledger: concurrency keys %q: %v", keys, err)) // strings always marshal
	}
	return string(b)
}

// decodeKeys is the keys the column holds (encodeKeys), nil for none.
func decodeKeys(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var keys []string
	if err := json.Unmarshal([]byte(s), &keys); err != nil {
		return nil, fmt.Errorf("concurrency keys %q: %w", s, err)
	}
	return keys, nil
}

// limitsProbeFor is how long a probe that found no limit spares the claims
// of this process their keyed path (limitsMayExist): a limit another
// process creates binds this one's claims at once (the claim statements
// skip keyed tasks while any limit exists) and is respected by its keyed
// claims within this time.
const limitsProbeFor = time.Second

// limitsMayExist reports whether a claim should take the keyed path: a
// limit was seen, or the last probe (at most limitsProbeFor ago) is stale.
// A wrong "yes" costs a keyed claim that finds no limit; a wrong "no"
// leaves keyed tasks to the next claim after the probe, never overruns a
// limit (TaskClaimParams.IDs). So a ledger without limits claims in one
// statement, as before limits existed, on both backends.
func (s *Service) limitsMayExist(ctx context.Context) (bool, error) {
	if s.limitsSeen.Load() {
		return true, nil
	}
	now := s.clock.Now()
	if now.UnixNano() < s.limitsUnseenUntil.Load() {
		return false, nil
	}
	rows, err := s.db.Executor().LimitList(ctx, driver.LimitListParams{})
	if err != nil {
		return false, err
	}
	s.noteLimits(len(rows) > 0, now)
	return len(rows) > 0, nil
}

// noteLimits records what a read of the limits found at now.
func (s *Service) noteLimits(exist bool, now time.Time) {
	s.limitsSeen.Store(exist)
	if !exist {
		s.limitsUnseenUntil.Store(now.Add(limitsProbeFor).UnixNano())
	}
}

// noteRateFree records that a key full at its rate frees a start at t
// (zero: none), when that is sooner than the time known: the waiting room
// then reads again at t, so that the claims waiting for such a key's tasks
// are woken when its budget frees, not by polling.
func (s *Service) noteRateFree(t time.Time) {
	if t.IsZero() {
		return
	}
	for {
		cur := s.rateFreeAt.Load()
		if cur != 0 && cur > s.clock.Now().UnixNano() && cur <= t.UnixNano() {
			return
		}
		if s.rateFreeAt.CompareAndSwap(cur, t.UnixNano()) {
			s.room.poke()
			return
		}
	}
}

// rateFree is when the waiting room should read again for a key full at
// its rate (zero: none, or past).
func (s *Service) rateFree(now time.Time) time.Time {
	ns := s.rateFreeAt.Load()
	if ns == 0 || ns <= now.UnixNano() {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// forgetLimits makes the next claim look for limits again (a limit
// changed: TopicFlowControl).
func (s *Service) forgetLimits() { s.limitsUnseenUntil.Store(0) }

// keyCaps is what the keyed claim knows of the keys in its transaction at
// now: the limits, per key its governing limit, its holders, and the
// starts of the keys a rate limit governs within the longest interval.
type keyCaps struct {
	now       time.Time
	limits    []cks.Limit
	intervals []time.Duration // of limits[i]; 0 without a rate limit
	windows   []time.Duration // of limits[i]'s spend budget; 0 without one
	gov       map[string]int  // key → index in limits, -1 for none
	held      map[string]int
	started   map[string][]time.Time // oldest first
	// spent is, per budget window length, each key's spend in the
	// current window of that length.
	spent map[time.Duration]map[string]driver.KeySpendRow
}

// windowStart is the start of the window of length w that holds t:
// windows are aligned to the Unix epoch, so every hub agrees on them (1h
// on the hour, 24h at 00:00 UTC).
func windowStart(t time.Time, w time.Duration) time.Time {
	ns := t.UnixNano()
	return time.Unix(0, ns-ns%int64(w)).UTC()
}

// governor is the index of the limit that governs key (-1: none): its
// most specific.
func (k *keyCaps) governor(key string) int {
	if g, ok := k.gov[key]; ok {
		return g
	}
	best := -1
	for i := range k.limits {
		if l := k.limits[i]; l.Matches(key) && (best < 0 || l.MoreSpecific(k.limits[best])) {
			best = i
		}
	}
	k.gov[key] = best
	return best
}

// inWindow is key's starts inside its rate limit's window (g: its
// governor), oldest first.
func (k *keyCaps) inWindow(key string, g int) []time.Time {
	ts := k.started[key]
	from := k.now.Add(-k.intervals[g])
	i, _ := slices.BinarySearchFunc(ts, from, func(t, from time.Time) int {
		if t.After(from) {
			return 1
		}
		return -1
	})
	return ts[i:]
}

// use is the index of key's governing limit (-1: none) and the key's use
// under it now: its holders, and (under a rate) its starts in the window.
func (k *keyCaps) use(key string) (int, cks.KeyRunning) {
	g := k.governor(key)
	kr := cks.KeyRunning{Key: key, Running: k.held[key]}
	if g >= 0 && k.limits[g].Starts > 0 {
		kr.Started = len(k.inWindow(key, g))
	}
	if g >= 0 && k.windows[g] > 0 {
		sp := k.spent[k.windows[g]][key]
		kr.Tokens, kr.Cost = sp.Tokens, cks.Cost(sp.CostNanos)
	}
	return g, kr
}

// full reports whether key may not be claimed now (cks.Limit.Full of its
// governing limit).
func (k *keyCaps) full(key string) bool {
	g, kr := k.use(key)
	return g >= 0 && k.limits[g].Full(kr)
}

// keys are the keys held, started or that spent in a budget's window,
// sorted.
func (k *keyCaps) keys() []string {
	out := slices.Collect(maps.Keys(k.held))
	for key := range k.started {
		out = append(out, key)
	}
	for _, spent := range k.spent {
		for key := range spent {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// saturated lists the keys held, started or spent that are full, sorted.
func (k *keyCaps) saturated() []string {
	return slices.DeleteFunc(k.keys(), func(key string) bool { return !k.full(key) })
}

// fits reports whether a task with keys may be claimed now: none of its
// keys is full.
func (k *keyCaps) fits(keys []string) bool {
	return !slices.ContainsFunc(keys, k.full)
}

// take counts keys as held, and started now, by one more task; it returns
// those a rate limit governs (their starts to record).
func (k *keyCaps) take(keys []string) (rated []string) {
	for _, key := range keys {
		k.held[key]++
		if g := k.governor(key); g >= 0 && k.limits[g].Starts > 0 {
			k.started[key] = append(k.started[key], k.now)
			rated = append(rated, key)
		}
	}
	return rated
}

// nextFree is when the first key full at its rate frees a start (its
// oldest start in the window that must leave, plus the interval), or a
// key that spent its budget enters its next window; zero when none is.
func (k *keyCaps) nextFree() time.Time {
	var next time.Time
	for w, spent := range k.spent {
		for key := range spent {
			if g, kr := k.use(key); g >= 0 && k.windows[g] == w && k.limits[g].Spent(kr) {
				if at := windowStart(k.now, w).Add(w); next.IsZero() || at.Before(next) {
					next = at
				}
			}
		}
	}
	for key := range k.started {
		g := k.governor(key)
		if g < 0 || k.limits[g].Starts == 0 {
			continue
		}
		ts := k.inWindow(key, g)
		if over := len(ts) - k.limits[g].Starts; over >= 0 {
			if at := ts[over].Add(k.intervals[g]); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// newKeyCaps is the keyCaps of the limits rows at now, before any key's
// use is read.
func newKeyCaps(now time.Time, rows []driver.LimitRow) *keyCaps {
	k := &keyCaps{now: now, limits: make([]cks.Limit, len(rows)), intervals: make([]time.Duration, len(rows)),
		windows: make([]time.Duration, len(rows)), gov: map[string]int{}, held: map[string]int{},
		started: map[string][]time.Time{}, spent: map[time.Duration]map[string]driver.KeySpendRow{}}
	for i, r := range rows {
		k.limits[i] = toLimit(r)
		if r.Starts > 0 {
			k.intervals[i] = time.Duration(r.IntervalMs) * time.Millisecond
		}
		if r.MaxTokens > 0 || r.MaxCostNanos > 0 {
			k.windows[i] = time.Duration(r.WindowMs) * time.Millisecond
		}
	}
	return k
}

// readKeyCaps reads, in ex's transaction at now, the limits (locked: the
// keyed claims of every hub take turns, each counting the holders and
// starts the one before it committed), the keys held, and the starts
// within the longest rate interval; with prune (a claim's write), it
// deletes the starts older than that first.
func readKeyCaps(ctx context.Context, ex driver.Executor, lock driver.Lock, now time.Time, prune bool) (*keyCaps, error) {
	rows, err := ex.LimitList(ctx, driver.LimitListParams{Lock: lock})
	if err != nil {
		return nil, err
	}
	k := newKeyCaps(now, rows)
	var longest, longestWindow time.Duration
	for i := range rows {
		longest = max(longest, k.intervals[i])
		longestWindow = max(longestWindow, k.windows[i])
	}
	if len(rows) == 0 {
		return k, nil
	}
	if longestWindow > 0 {
		if prune {
			if _, err := ex.KeySpendPrune(ctx, windowStart(now, longestWindow)); err != nil {
				return nil, err
			}
		}
		for _, w := range k.windows {
			if w == 0 || k.spent[w] != nil {
				continue
			}
			rows, err := ex.KeySpendIn(ctx, driver.KeySpendInParams{WindowMs: w.Milliseconds(), WindowStart: windowStart(now, w)})
			if err != nil {
				return nil, err
			}
			k.spent[w] = map[string]driver.KeySpendRow{}
			for _, r := range rows {
				k.spent[w][r.Key] = r
			}
		}
	}
	held, err := ex.TaskKeysHeld(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range held {
		keys, err := decodeKeys(h)
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			k.held[key]++
		}
	}
	if longest > 0 {
		since := now.Add(-longest)
		if prune {
			if _, err := ex.KeyStartsPrune(ctx, since); err != nil {
				return nil, err
			}
		}
		starts, err := ex.KeyStartsSince(ctx, since)
		if err != nil {
			return nil, err
		}
		for _, st := range starts {
			k.started[st.Key] = append(k.started[st.Key], st.StartedAt)
		}
	}
	return k, nil
}

// claimKeyed is the claim of p when limits exist (k): it reads the
// claimable tasks in claim order, locked, skipping the full keys (at
// their cap or their rate); takes each candidate whose keys all have room,
// counting it at once (a batch's own claims count against the cap and the
// rate); claims the chosen tasks by id (TaskClaimParams.IDs), in claim
// order; and records the starts of the rate-limited keys. A candidate passed over
// because the batch filled its key is read past: when the read was full
// and leases are left, it reads again with the keys saturated since — so a
// capped key never blocks the tasks of other keys behind it.
func claimKeyed(ctx context.Context, ex driver.Executor, k *keyCaps, p driver.TaskClaimParams) ([]driver.TaskClaimed, error) {
	want := min(p.Limit, len(p.Leases))
	var (
		ids    []int64
		chosen []driver.TaskRow
		rated  []string // the keys of the chosen tasks a rate limit governs
	)
	seen := map[int64]bool{}
	for len(ids) < want {
		sel := p.TaskClaimableParams
		sel.Saturated = k.saturated()
		// As many as there are leases left, past those seen (a row this
		// transaction locked is read again): a read that passes rows
		// over reads again, past the keys it saturated.
		sel.Limit = want - len(ids) + len(seen)
		rows, err := ex.TaskClaimable(ctx, sel)
		if err != nil {
			return nil, err
		}
		passed := false
		for _, r := range rows {
			if seen[r.ID] || len(ids) == want {
				continue
			}
			seen[r.ID] = true
			keys, err := decodeKeys(r.ConcurrencyKeys)
			if err != nil {
				return nil, err
			}
			if !k.fits(keys) {
				passed = true
				continue
			}
			rated = append(rated, k.take(keys)...)
			ids = append(ids, r.ID)
			chosen = append(chosen, r)
		}
		// Done when the read ran dry, or passed nothing over (another
		// read would find the same).
		if len(rows) < sel.Limit || !passed {
			break
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	p.IDs, p.Chosen = ids, chosen
	claimed, err := ex.TaskClaim(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(claimed) != len(ids) {
		// Locked by this transaction's read, so every one is claimed.
		return nil, fmt.Errorf("keyed claim: %d of the %d tasks chosen were claimed", len(claimed), len(ids))
	}
	if err := ex.KeyStartInsertMany(ctx, rated, k.now); err != nil {
		return nil, err
	}
	return claimed, nil
}

// SetLimitParams are set_limit's: the limit and who sets it.
type SetLimitParams struct {
	cks.LimitInput
	Actor string
}

// SetLimit creates the limit p names, or replaces its pattern and cap
// (issue 42). From its commit on, the claims of every hub and agent on the
// database respect it: a hub that has not yet read it skips the tasks with
// keys until it has (TaskClaimParams.IDs). Two limits may not share a
// pattern (a conflict naming the other). Raising a cap wakes the waiting
// claims (TopicTasksReady in the same commit).
func (s *Service) SetLimit(ctx context.Context, p SetLimitParams) (cks.Limit, error) {
	if err := p.Validate(); err != nil {
		return cks.Limit{}, err
	}
	var out cks.Limit
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		rows, err := ex.LimitList(ctx, driver.LimitListParams{Lock: driver.LockUpdate})
		if err != nil {
			return err
		}
		interval, _ := p.IntervalDuration() // validated
		tokens, cost, window, _ := p.Budget()
		r := driver.LimitRow{Name: p.Name, Pattern: p.Pattern, MaxRunning: p.MaxRunning, CreatedBy: p.Actor,
			CreatedAt: now, UpdatedAt: now, Starts: p.Starts, IntervalMs: interval.Milliseconds(),
			MaxTokens: tokens, MaxCostNanos: int64(cost), WindowMs: window.Milliseconds()}
		for _, o := range rows {
			switch {
			case o.Name == p.Name:
				r.CreatedBy, r.CreatedAt = o.CreatedBy, o.CreatedAt
			case o.Pattern == p.Pattern:
				return &cks.FieldError{Field: "pattern", Expected: fmt.Sprintf("a pattern no other limit has (limit %q has %q)", o.Name, o.Pattern)}
			}
		}
		if err := ex.LimitPut(ctx, r); err != nil {
			if errors.Is(err, driver.ErrUniqueViolation) {
				return fmt.Errorf("another limit took pattern %q at the same time: %w", p.Pattern, cks.ErrConflict)
			}
			return err
		}
		out = toLimit(r)
		if err := ex.Notify(ctx, cks.TopicFlowControl); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicTasksReady)
	})
	if err == nil {
		s.noteLimits(true, s.clock.Now())
	}
	return out, err
}

// DeleteLimit deletes a limit; the keys it governed are free of it from the
// commit on (the waiting claims are woken). Deleting a limit that does not
// exist changes nothing (Deleted false).
func (s *Service) DeleteLimit(ctx context.Context, name string) (cks.LimitDeleted, error) {
	out := cks.LimitDeleted{Name: name}
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, _ time.Time) error {
		n, err := ex.LimitDelete(ctx, name)
		if err != nil || n == 0 {
			return err
		}
		out.Deleted = true
		if err := ex.Notify(ctx, cks.TopicFlowControl); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicTasksReady)
	})
	return out, err
}

// Limits returns every limit, by name, each with the keys it governs that
// are held now (the most held first, at most cks.MaxLimitKeysShown) and how
// many are at the cap: one read of the limits and of the held keys.
func (s *Service) Limits(ctx context.Context) (cks.LimitList, error) {
	var k *keyCaps
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		var err error
		k, err = readKeyCaps(ctx, ex, driver.LockNone, s.clock.Now(), false)
		return err
	})
	if err != nil {
		return cks.LimitList{}, err
	}
	out := cks.LimitList{Limits: make([]cks.LimitStatus, len(k.limits))}
	for i, l := range k.limits {
		out.Limits[i] = cks.LimitStatus{Limit: l, Keys: []cks.KeyRunning{}}
	}
	for _, key := range k.keys() {
		g, kr := k.use(key)
		if g < 0 || (kr.Running == 0 && kr.Started == 0 && kr.Tokens == 0 && kr.Cost == 0) {
			continue
		}
		st := &out.Limits[g]
		st.Held++
		if st.Full(kr) {
			st.Saturated++
		}
		st.Keys = append(st.Keys, kr)
	}
	for i := range out.Limits {
		keys := out.Limits[i].Keys
		slices.SortFunc(keys, func(a, b cks.KeyRunning) int {
			if a.Running != b.Running {
				return b.Running - a.Running
			}
			return strings.Compare(a.Key, b.Key)
		})
		out.Limits[i].Keys = keys[:min(len(keys), cks.MaxLimitKeysShown)]
	}
	return out, nil
}

func toLimit(r driver.LimitRow) cks.Limit {
	l := cks.Limit{Name: r.Name, Pattern: r.Pattern, MaxRunning: r.MaxRunning, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Starts: r.Starts}
	if r.Starts > 0 {
		l.Interval = cks.Duration(cks.FormatDuration(time.Duration(r.IntervalMs) * time.Millisecond))
	}
	if r.MaxTokens > 0 || r.MaxCostNanos > 0 {
		l.MaxTokens, l.MaxCost = r.MaxTokens, cks.Cost(r.MaxCostNanos)
		l.Window = cks.Duration(cks.FormatDuration(time.Duration(r.WindowMs) * time.Millisecond))
	}
	return l
}

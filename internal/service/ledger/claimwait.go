package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// MaxClaimWait bounds ClaimParams.Wait: a claim is held at most this long
// for work to arrive (issue 41's long poll), well inside the HTTP write
// timeout it extends and the proxies' usual idle limits.
const MaxClaimWait = 60 * time.Second

// roomRetry is how soon the waiting room reads again after a read failed
// (the database away): its waiters keep waiting meanwhile.
const roomRetry = time.Second

// roomKnowsFor bounds how long what the room read may spare a claim its
// first look (waitRoom.nothingDue): past it the claim looks, and the room
// reads again, in case the change listener lost a notification without
// noticing.
const roomKnowsFor = 30 * time.Second

// waitRoom holds the claims that wait for work (ClaimParams.Wait) of one
// service. A waiting claim costs the database nothing: the room watches
// cks.TopicTasksReady through the process's one change listener, and only
// when a task became OPEN — or when the next task whose run_after was in
// the future becomes due — does it read, once for all its waiters, which
// types have due tasks and how many (TaskTypesDue, TaskNextDue), and wakes
// the waiters those tasks can serve, oldest first; a woken waiter claims
// as any claim does. A waiter enters the room before its first claim, so a
// task made OPEN after that claim read the ledger is announced by a
// notification the room hears with the waiter inside.
//
// What the room read also spares a waiting claim its first look: an agent
// re-polls when its wait ends, and while nothing was announced since the
// room's last read found none of its types due, that claim would find
// nothing, so it goes straight to waiting (an idle fleet's re-polls cost
// the database nothing).
type waitRoom struct {
	s *Service

	mu      sync.Mutex
	waiters map[*claimWaiter]struct{}
	seq     uint64
	started bool          // the watch runs (or ran: it ends with the listener)
	kick    chan struct{} // a task became OPEN, or a waiter came: read
	pokes   uint64        // counts the kicks: a read kicked during is stale
	known   roomKnows     // what the last read found, while it holds

	reads  atomic.Int64 // the room's reads of the ledger (tests)
	spared atomic.Int64 // the claims its knowledge spared a look (tests)
}

// roomKnows is what the room's last read found: the types with due tasks
// at, and when the next task not yet due becomes due (zero: none). It
// holds (valid) until the next kick, or the room empties.
type roomKnows struct {
	valid bool
	at    time.Time
	due   map[string]bool
	next  time.Time
}

// claimWaiter is one waiting claim.
type claimWaiter struct {
	seq   uint64        // its place in the queue: the oldest is served first
	types []string      // the types it claims; none is any
	n     int           // how many tasks it claims at most
	wake  chan struct{} // capacity 1: a wake-up, never lost, never queued twice
	idle  bool          // its last claim found nothing: it waits (r.mu)
}

// enter adds a waiter for p to the room, starting the room's watch on first
// use. It reports false when the service has no change listener (a ledger
// that never waits): the caller then waits out its time and claims again.
func (r *waitRoom) enter(p ClaimParams) (*claimWaiter, bool) {
	if r.s.changes == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	w := &claimWaiter{seq: r.seq, types: p.Types, n: p.N, wake: make(chan struct{}, 1)}
	if r.waiters == nil {
		r.waiters = map[*claimWaiter]struct{}{}
		r.kick = make(chan struct{}, 1)
	}
	r.waiters[w] = struct{}{}
	if len(r.waiters) == 1 && r.started {
		// The room read nothing while it was empty, so it does not know
		// when the next task not yet due becomes due: one read now.
		r.pokeLocked()
	}
	if !r.started {
		r.started = true
		// Both end when the listener does (the backend closes); its first
		// call, once established, kicks a read for what came before it.
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			// A limit made elsewhere (TopicFlowControl, published with
			// TopicTasksReady, sorted before it) is looked for by the
			// claims it wakes (forgetLimits).
			r.s.changes.WatchChanges(context.Background(), []string{cks.TopicFlowControl, cks.TopicTasksReady}, func(topic string) { //nolint:errcheck // ends with the listener
				if topic == cks.TopicFlowControl {
					r.s.forgetLimits()
					return
				}
				r.poke()
			})
		}()
		go r.run(watched)
	}
	return w, true
}

// idle records whether w waits (its last claim found nothing) or claims.
func (r *waitRoom) idle(w *claimWaiter, idle bool) {
	r.mu.Lock()
	w.idle = idle
	r.mu.Unlock()
}

// leave takes w out of the room. An empty room stops knowing: it reads
// nothing while empty.
func (r *waitRoom) leave(w *claimWaiter) {
	r.mu.Lock()
	delete(r.waiters, w)
	if len(r.waiters) == 0 {
		r.known.valid = false
	}
	r.mu.Unlock()
}

// nothingDue reports whether the room knows that a claim of w would find
// nothing now: its last read, not kicked since and younger than
// roomKnowsFor, found none of w's types due (none at all, for a claim of
// any type) and no task becomes due before now. A read too old to say is
// renewed.
func (r *waitRoom) nothingDue(w *claimWaiter) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, now := r.known, r.s.clock.Now()
	if !k.valid {
		return false
	}
	if now.Sub(k.at) >= roomKnowsFor || !k.next.IsZero() && !now.Before(k.next) {
		r.pokeLocked()
		return false
	}
	none := len(k.due) == 0
	if len(w.types) > 0 {
		none = !slices.ContainsFunc(w.types, func(t string) bool { return k.due[t] })
	}
	if none {
		r.spared.Add(1)
	}
	return none
}

// poke asks the room to read (without blocking: one read covers many).
func (r *waitRoom) poke() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pokeLocked()
}

// pokeLocked is poke with r.mu held; what the room knew no longer holds.
func (r *waitRoom) pokeLocked() {
	r.pokes++
	r.known.valid = false
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run reads whenever poked, and when the next task not yet due becomes
// due, until the watch ends.
func (r *waitRoom) run(watched <-chan struct{}) {
	var (
		timer clock.Timer
		due   <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-watched:
			return
		case <-r.kick:
		case <-due:
		}
		next := r.read()
		if timer != nil {
			timer.Stop()
			timer, due = nil, nil
		}
		if !next.IsZero() {
			timer = r.s.clock.NewTimer(max(next.Sub(r.s.clock.Now()), 0))
			due = timer.C()
		}
	}
}

// read wakes the waiters the due tasks can serve and returns when to read
// again though nothing is announced: when the next task not yet due
// becomes due, or soon after a failed read (zero: never). With no waiter it
// reads nothing.
func (r *waitRoom) read() time.Time {
	r.mu.Lock()
	empty, pokes := len(r.waiters) == 0, r.pokes
	r.mu.Unlock()
	if empty {
		return time.Time{}
	}
	r.reads.Add(1)
	now := r.s.clock.Now()
	var (
		due  []driver.TaskTypeDue
		next time.Time
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		if due, err = ex.TaskTypesDue(ctx, now); err != nil {
			return err
		}
		next, err = ex.TaskNextDue(ctx, now)
		return err
	})
	if err != nil {
		return now.Add(roomRetry)
	}
	// A key full at its rate frees a start then: its tasks are due but
	// not claimable until it does (noteRateFree).
	if free := r.s.rateFree(now); !free.IsZero() && (next.IsZero() || free.Before(next)) {
		next = free
	}
	left := make(map[string]int, len(due)) // due tasks per type not yet promised to a waiter
	known := roomKnows{valid: true, at: now, due: make(map[string]bool, len(due)), next: next}
	total := 0
	for _, d := range due {
		left[d.Type] = d.Due
		known.due[d.Type] = d.Due > 0
		total += d.Due
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pokes == pokes && len(r.waiters) > 0 {
		r.known = known
	}
	queue := make([]*claimWaiter, 0, len(r.waiters))
	for w := range r.waiters {
		queue = append(queue, w)
	}
	slices.SortFunc(queue, func(a, b *claimWaiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range queue {
		if total <= 0 {
			break
		}
		if len(w.types) == 0 {
			r.wakeLocked(w)
			total -= w.n
			continue
		}
		for _, t := range w.types {
			if left[t] > 0 {
				r.wakeLocked(w)
				left[t] -= w.n
				total -= w.n
				break
			}
		}
	}
	return next
}

func (r *waitRoom) wakeLocked(w *claimWaiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// validateWait checks ClaimParams.Wait.
func validateWait(d time.Duration) error {
	if d < 0 || d > MaxClaimWait {
		return &cks.FieldError{Field: "wait_s", Expected: fmt.Sprintf("a wait of 0 to %.0f seconds", MaxClaimWait.Seconds())}
	}
	return nil
}

// claimWaiting is Claim for a claim that waits (p.Wait > 0): it claims
// (unless the room knows it would find nothing), and with nothing to claim
// waits in the room until a task it could take is announced, then claims
// again, until it has tasks, p.Wait of the service's clock has passed (an
// empty answer) or ctx ends.
func (s *Service) claimWaiting(ctx context.Context, p ClaimParams) ([]cks.ClaimedTask, error) {
	w, ok := s.room.enter(p)
	if ok {
		defer s.room.leave(w)
	}
	deadline := s.clock.NewTimer(p.Wait)
	defer deadline.Stop()
	look := !ok || !s.room.nothingDue(w)
	for {
		var out []cks.ClaimedTask
		if look {
			var err error
			if out, err = s.claimNow(ctx, p); err != nil || len(out) > 0 {
				return out, err
			}
		}
		look = true
		var wake chan struct{}
		if ok {
			wake = w.wake
			s.room.idle(w, true)
		}
		select {
		case <-wake:
			s.room.idle(w, false)
		case <-deadline.C():
			if ok {
				return out, nil // every task made OPEN meanwhile was announced
			}
			return s.claimNow(ctx, p) // no listener: one last look
		case <-p.Interrupt:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ClaimsWaiting is how many claims wait for work now (ClaimParams.Wait):
// their last claim found nothing.
func (s *Service) ClaimsWaiting() int {
	s.room.mu.Lock()
	defer s.room.mu.Unlock()
	n := 0
	for w := range s.room.waiters {
		if w.idle {
			n++
		}
	}
	return n
}

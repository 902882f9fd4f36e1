package ledger

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// CountsTTL is how long one read of TaskCounts answers every caller at
// least: a Prometheus scrape every 15 s or more reads the store at most
// once a scrape, and scrapes that come closer (several Prometheus servers,
// a person reloading /metrics) share the read. A read that took longer
// than CountsTTL/CountsCostFactor is kept CountsCostFactor times as long
// as it took (countsTTL).
const CountsTTL = 10 * time.Second

// CountsCostFactor bounds the share of its time a process spends reading
// TaskCounts to 1/CountsCostFactor (5 %), however large the ledger: an
// answer is kept CountsCostFactor times as long as its read took, when
// that is longer than CountsTTL.
const CountsCostFactor = 20

// MaxCountedTypes bounds the task types TaskCounts names: the tasks of
// every other type are counted together (OtherType), so a metric labelled
// by type has at most MaxCountedTypes+1 values of it, and each
// read of the counts at most MaxCountedTypes counts by type.
const MaxCountedTypes = 20

// OtherType is the type label of the tasks of the types TaskCounts (and
// the hub's task metrics) do not name.
const OtherType = "other"

// TaskCounts is the ledger's count of tasks by state, whole and for each of
// up to MaxCountedTypes task types.
type TaskCounts struct {
	// At is when the counts were read (up to CountsTTL before the call).
	At time.Time
	// ByState counts every task, by state (every state, 0 included).
	ByState map[cks.TaskState]int
	// ByType counts the tasks of each type named, by state (every state);
	// ByState less their sum are the tasks of the other types.
	ByType map[string]map[cks.TaskState]int
}

// TaskCounts returns the tasks by state, and by state for each of up to
// MaxCountedTypes types, read at most once per CountsTTL of the service's
// clock and shared by every caller meanwhile (readCache): a fresh answer
// costs no read of the store. The types named are, in this order until
// MaxCountedTypes: those with the most due OPEN tasks, those with tasks
// CLAIMED or RUNNING (UnclaimedTypes' read, whose cache this shares), then
// those the last answer named — so a type stays named while its tasks run
// and after they drained, until busier types displace it.
//
// Cost of a read (one read transaction): the count by state (from the
// state indexes, TaskCountByState unfiltered), and one count by state per
// type named (TaskCountByState of the type): the schema has no index of
// every state by type, so each of those reads the rows of the table — on
// SQLite about 1.8 s for the 20 counts at 200,000 tasks. An answer is
// therefore kept CountsTTL, or CountsCostFactor times as long as its read
// took (36 s there), so a process spends at most 1/CountsCostFactor of its
// time reading the counts, and the counts grow staler as the ledger grows.
// (A count grouped by state and type in one statement would read the
// table once; the driver has none yet.)
func (s *Service) TaskCounts(ctx context.Context) (TaskCounts, error) {
	return s.counts.get(ctx, struct{}{}, s.clock.Now())
}

// countedTypes are the types the last read of TaskCounts named, and how
// long that read took (readCounts).
type countedTypes struct {
	mu    sync.Mutex
	types []string
	took  time.Duration
}

// countsTTL is how long TaskCounts keeps an answer: CountsTTL, or
// CountsCostFactor times as long as the last read took when that is longer.
func (s *Service) countsTTL(struct{}) time.Duration {
	s.counted.mu.Lock()
	defer s.counted.mu.Unlock()
	return max(CountsTTL, CountsCostFactor*s.counted.took)
}

// readCounts is TaskCounts' read of the store, behind its cache.
func (s *Service) readCounts(ctx context.Context, _ struct{}) (TaskCounts, error) {
	now, start := s.clock.Now(), s.clock.Monotonic()
	tr, err := s.types.get(ctx, struct{}{}, now)
	if err != nil {
		return TaskCounts{}, fmt.Errorf("task counts: %w", err)
	}
	s.counted.mu.Lock()
	before := s.counted.types
	s.counted.mu.Unlock()
	types := namedTypes(tr, before)
	out := TaskCounts{At: now, ByState: zeroCounts(), ByType: make(map[string]map[cks.TaskState]int, len(types))}
	err = s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		all, err := ex.TaskCountByState(ctx, driver.TaskCountParams{})
		if err != nil {
			return err
		}
		out.ByState = countsOf(all)
		for _, t := range types {
			rows, err := ex.TaskCountByState(ctx, driver.TaskCountParams{Types: []string{t}})
			if err != nil {
				return err
			}
			out.ByType[t] = countsOf(rows)
		}
		return nil
	})
	if err != nil {
		return TaskCounts{}, fmt.Errorf("task counts: %w", err)
	}
	// A type whose tasks are all gone (purged) is not named again unless
	// it comes back.
	keep := slices.DeleteFunc(slices.Clone(types), func(t string) bool {
		n := 0
		for _, c := range out.ByType[t] {
			n += c
		}
		return n == 0
	})
	s.counted.mu.Lock()
	s.counted.types, s.counted.took = keep, clock.Since(s.clock, start)
	s.counted.mu.Unlock()
	return out, nil
}

// namedTypes picks the types TaskCounts names from the types due and held
// (tr) and those named before (TaskCounts' rule of which).
func namedTypes(tr typesRead, before []string) []string {
	due := slices.Clone(tr.due)
	slices.SortFunc(due, func(a, b driver.TaskTypeDue) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.Type, b.Type))
	})
	out := make([]string, 0, MaxCountedTypes)
	add := func(t string) {
		if len(out) < MaxCountedTypes && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, d := range due {
		add(d.Type)
	}
	for _, t := range slices.Sorted(maps.Keys(tr.held)) {
		add(t)
	}
	for _, t := range before {
		add(t)
	}
	return out
}

// zeroCounts is a count of every state, all 0.
func zeroCounts() map[cks.TaskState]int {
	out := make(map[cks.TaskState]int, len(All))
	for _, st := range All {
		out[st] = 0
	}
	return out
}

// countsOf is rows as a count of every state.
func countsOf(rows []driver.TaskStateCount) map[cks.TaskState]int {
	out := zeroCounts()
	for _, r := range rows {
		out[cks.TaskState(r.State)] += r.Count
	}
	return out
}

// cloneCounts is a copy of c that shares no map with it.
func cloneCounts(c TaskCounts) TaskCounts {
	c.ByState = maps.Clone(c.ByState)
	byType := make(map[string]map[cks.TaskState]int, len(c.ByType))
	for t, m := range c.ByType {
		byType[t] = maps.Clone(m)
	}
	c.ByType = byType
	return c
}

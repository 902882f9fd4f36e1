// Package events is the in-process event bus of a cks process. Events are
// wake-up signals, not data: a subscriber that receives one re-reads the state
// it cares about, so a dropped or coalesced event loses nothing.
package events

import (
	"sync"
	"time"
)

// Event types published on the bus.
const (
	// ProcessesChanged: a liveness row or a computed process status changed.
	ProcessesChanged = "processes"
	// SweepersChanged: a sweeper was started or stopped, here or on another node.
	SweepersChanged = "sweepers"
	// ObjectsChanged: an object of the knowledge store became claimable or
	// changed status (cks.TopicObjects), written by this or any other
	// process on the store: a research question moved a step.
	ObjectsChanged = "objects"
	// TasksChanged: a task changed — a call of the operations table changed
	// one (created, claimed, moved, stopped, answered, …; not a lease
	// renewal), a sweeper pass handled some, or any process on the store made
	// one ready or requested or confirmed an abort (cks.TopicTasksReady,
	// cks.TopicTaskAborts). The studio's board and task pages re-read on it.
	TasksChanged = "tasks"
	// SchedulesChanged: a schedule was created, paused, resumed, triggered
	// or deleted, by this or any other process on the store
	// (cks.TopicSchedules). The studio's Flow control page re-reads on it.
	SchedulesChanged = "schedules"
	// AgentStepStarted: a pipeline step began work on an object (ADR-007 §5);
	// Data is a StepEvent.
	AgentStepStarted = "agent_step_started"
	// AgentStepCompleted: a pipeline step finished work on an object; Data is
	// a StepEvent with the outcome.
	AgentStepCompleted = "agent_step_completed"
)

// StepEvent is the Data of AgentStepStarted and AgentStepCompleted.
type StepEvent struct {
	Step     string `json:"step"`
	Worker   string `json:"worker"`
	ObjectID int64  `json:"object_id"`
	// From is the status the step claimed the object in; To and Outcome
	// are set on completion (Outcome: completed, rejected, parked, failed,
	// skipped, released).
	From    string `json:"from"`
	To      string `json:"to,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// DurationMS is the step's run time, on completion.
	DurationMS float64 `json:"duration_ms,omitempty"`
}

// Event is one notification.
type Event struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Data is the event's detail, when its type has one.
	Data any `json:"data,omitempty"`
	// TaskIDs, on a TasksChanged event, name the tasks the change was made
	// on when it is known (a call of this process on a task): a listener
	// may re-read those only. A change may also move tasks it does not
	// name (a dependant released, a child cancelled); those moves are
	// published without ids by the change listener. Not sent to clients.
	TaskIDs []int64 `json:"-"`
}

// Bus fans events out to subscribers. A slow subscriber misses events rather
// than blocking publishers; since events carry no payload that is harmless.
// The zero value is ready to use.
type Bus struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

// Subscribe returns a channel of events and a function that ends the
// subscription and closes the channel.
func (b *Bus) Subscribe() (<-chan Event, func()) { return b.SubscribeBuffered(16) }

// SubscribeBuffered is Subscribe with a channel buffer of n events, for a
// subscriber that must miss as few as possible of a burst (a benchmark
// sampling every step).
func (b *Bus) SubscribeBuffered(n int) (<-chan Event, func()) {
	ch := make(chan Event, max(n, 1))
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan Event]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// Publish delivers e to every subscriber that has room for it.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

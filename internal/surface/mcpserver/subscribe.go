package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// Resource subscriptions (resources/subscribe, notifications/resources/updated).
// The hub's one change listener (package notifier) feeds its event bus
// (svc.Bus) with every task and object change, whichever process made it;
// one loop per server follows that bus while anything is subscribed, and on
// a change re-reads the subscribed URIs the change can affect — each once,
// however many sessions hold it — and notifies their subscribers when what
// the resource answers changed. No subscription polls and none listens on
// its own.
//
// What a change can affect: a task change re-reads task resources only
// (cks://tasks/ID, cks://inbox, cks://stopped), an object change object
// resources only. A task change that names its tasks (a call of this hub
// on a task: events.Event.TaskIDs) re-reads those tasks and the two lists
// at once. One that does not (a change by another process, or one whose
// tasks are not known: a claim, a bulk call, a dependency released) re-reads
// every resource of its scope, at most once per full-pass interval
// (SubscriptionPass, or a millisecond per resource the last pass read): the
// changes of a burst are coalesced into the pass at the end of the
// interval, which is never skipped. Subscriptions are bounded per session
// (MaxSubscriptions) and per token (MaxSubscriptionsPerToken).

// MaxSubscriptions caps the URIs one session may subscribe to, and
// MaxSubscriptionsPerToken those of all the sessions of one principal.
const (
	MaxSubscriptions         = 100
	MaxSubscriptionsPerToken = 500
)

// DefaultSubscriptionPass is the least time between two full passes of one
// scope; a pass that read many resources makes the next wait passPerRead
// for each (full passes read at most a thousand resources a second).
const (
	DefaultSubscriptionPass = time.Second
	passPerRead             = time.Millisecond
)

// scope is what kind of change can affect a resource.
type scope uint8

const (
	scopeTasks scope = 1 << iota
	scopeObjects
	// scopeOutput: a task's output (cks://tasks/ID/output), never passed
	// over on bus events: each subscribed URI is woken by the ledger's
	// output feed (ledger.Service.WatchOutput), the hub's one listener.
	scopeOutput
)

// subscriptions are the URIs the sessions of one server subscribed to.
type subscriptions struct {
	srv   *mcp.Server // set once the server exists, before any request
	svc   *ops.Services
	log   *slog.Logger
	clock clock.Clock
	pass  time.Duration // SubscriptionPass

	// reads counts the resources read to learn whether they changed.
	reads atomic.Int64

	mu      sync.Mutex
	uris    map[string]*watched            // by URI
	held    map[*mcp.ServerSession]*holder // by session
	tokens  map[string]int                 // URIs held, by principal
	running bool                           // the loop runs (while uris is not empty)
	stop    chan struct{}                  // closed to end the loop when uris empties
}

// holder is a subscribed session: its principal and how many URIs it holds.
type holder struct {
	principal string
	n         int
}

// watched is one subscribed URI: its resource, its sessions and the digest
// of its last answer.
type watched struct {
	res      resource
	op       ops.Operation
	scope    scope
	task     int64 // the task of cks://tasks/ID, else 0
	sessions map[*mcp.ServerSession]bool
	digest   [32]byte
	// stop ends the output watch of a scopeOutput URI.
	stop context.CancelFunc
}

func newSubscriptions(svc *ops.Services, pass time.Duration) *subscriptions {
	log := svc.Logger
	if log == nil {
		log = slog.Default()
	}
	c := svc.Clock
	if c == nil {
		c = clock.System{}
	}
	if pass <= 0 {
		pass = DefaultSubscriptionPass
	}
	return &subscriptions{svc: svc, log: log, clock: c, pass: pass, uris: map[string]*watched{},
		held: map[*mcp.ServerSession]*holder{}, tokens: map[string]int{}}
}

// subscribe is the SubscribeHandler: it reads the resource as the caller —
// so one that does not exist, or that the caller may not read, is refused
// as resources/read refuses it — and adds the session to its subscribers,
// within the bounds per session and per token.
func (s *subscriptions) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	r, op, ok := s.resolve(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	if _, err := readHandler(r, op, s.svc)(ctx, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}}); err != nil {
		return err
	}
	digest, _ := s.digest(r, op, uri)
	p, _ := auth.PrincipalFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.uris[uri]
	if w != nil && w.sessions[req.Session] {
		return nil // held already
	}
	h := s.held[req.Session]
	if h != nil && h.n >= MaxSubscriptions {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("this session holds %d subscriptions, the most it may: unsubscribe from one first", h.n)}
	}
	if n := s.tokens[p.ID]; n >= MaxSubscriptionsPerToken {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"the sessions of this token hold %d subscriptions, the most one token may: unsubscribe from one first", n)}
	}
	if w == nil {
		w = &watched{res: r, op: op, scope: scopeOf(r), sessions: map[*mcp.ServerSession]bool{}, digest: digest}
		if id, ok := r.args(uri)["task_id"].(int64); ok && r.op == ToolGetTask {
			w.task = id
		}
		if id, ok := r.args(uri)["task_id"].(int64); ok && w.scope == scopeOutput {
			w.task = id
			s.watchOutput(uri, w)
		}
		s.uris[uri] = w
	}
	w.sessions[req.Session] = true
	if h == nil {
		h = &holder{principal: p.ID}
		s.held[req.Session] = h
		// A session that ends without unsubscribing is dropped when it ends.
		go func(ss *mcp.ServerSession) {
			ss.Wait() //nolint:errcheck // only its end matters
			s.drop(ss, "")
		}(req.Session)
	}
	h.n++
	s.tokens[h.principal]++
	if !s.running {
		s.running = true
		s.stop = make(chan struct{})
		// On the bus before the subscription is answered: a change
		// right after it is seen.
		ch, unsubscribe := s.svc.Bus.Subscribe()
		go func(stop chan struct{}) {
			defer unsubscribe()
			s.loop(stop, ch)
		}(s.stop)
	}
	return nil
}

// watchOutput starts the output watch of w, subscribed as uri: each
// wake of the ledger's output feed for its task — a chunk appended, the
// task's state or attempt changed; the feed reads once for every follower
// of the hub — notifies its subscribers, who read what they need
// (get_output after the seq they have). It ends when the URI's last
// subscriber leaves (drop).
func (s *subscriptions) watchOutput(uri string, w *watched) {
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	go s.svc.Tasks.WatchOutput(ctx, w.task, func() { //nolint:errcheck // returns nil when ctx ends; a hub always has a feed
		if err := s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil && ctx.Err() == nil {
			s.log.Warn("mcp subscription: notifying", "uri", uri, "err", err)
		}
	})
}

// scopeOf is the scope of changes that can affect r.
func scopeOf(r resource) scope {
	if r.op == ToolGetOutput {
		return scopeOutput
	}
	if r.op == ToolGetTask || r.op == ToolListTasks {
		return scopeTasks
	}
	return scopeObjects
}

// holds reports whether ss holds any subscription.
func (s *subscriptions) holds(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[ss]
	return h != nil && h.n > 0
}

// unsubscribe is the UnsubscribeHandler.
func (s *subscriptions) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.drop(req.Session, req.Params.URI)
	return nil
}

// drop removes ss's subscription to uri ("": all of them), and ends the
// loop when nothing is subscribed any more.
func (s *subscriptions) drop(ss *mcp.ServerSession, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[ss]
	if h == nil {
		return
	}
	for u, w := range s.uris {
		if (uri == "" || u == uri) && w.sessions[ss] {
			delete(w.sessions, ss)
			h.n--
			s.tokens[h.principal]--
			if len(w.sessions) == 0 {
				delete(s.uris, u)
				if w.stop != nil {
					w.stop()
				}
			}
		}
	}
	if s.tokens[h.principal] <= 0 {
		delete(s.tokens, h.principal)
	}
	if uri == "" { // the session ended
		delete(s.held, ss)
	}
	if len(s.uris) == 0 && s.running {
		s.running = false
		close(s.stop)
	}
}

// resolve returns the resource a URI names and the operation reading it.
func (s *subscriptions) resolve(uri string) (resource, ops.Operation, bool) {
	byName := map[string]ops.Operation{}
	for _, op := range ops.Available(ops.All(), ops.MCP, s.svc) {
		byName[op.Spec().Name] = op
	}
	for _, r := range resources {
		if op, ok := byName[r.op]; ok && r.args(uri) != nil {
			return r, op, true
		}
	}
	return resource{}, nil, false
}

// digest reads uri as the hub itself (the notification names the URI only:
// each subscriber reads it with its own token) and hashes the answer; a
// failed read (the task deleted, the store down) hashes to zero.
func (s *subscriptions) digest(r resource, op ops.Operation, uri string) ([32]byte, error) {
	s.reads.Add(1)
	res, err := readHandler(r, op, s.svc)(auth.WithLocalOperator(context.Background()),
		&mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return [32]byte{}, err
	}
	b, _ := json.Marshal(res.Contents)
	return sha256.Sum256(b), nil
}

// change is what a burst of bus events asks to re-read: the scopes to
// pass over whole, and the tasks named.
type change struct {
	full  scope
	tasks map[int64]bool
}

// add notes event e.
func (c *change) add(e events.Event) {
	switch e.Type {
	case events.TasksChanged:
		if len(e.TaskIDs) == 0 {
			c.full |= scopeTasks
			return
		}
		if c.tasks == nil {
			c.tasks = map[int64]bool{}
		}
		for _, id := range e.TaskIDs {
			c.tasks[id] = true
		}
	case events.ObjectsChanged:
		c.full |= scopeObjects
	}
}

// loop follows the bus (ch) until stop is closed: a change re-reads at once the
// tasks it names, and the scopes it does not name its resources in once
// their full-pass interval has passed since their last full pass.
func (s *subscriptions) loop(stop chan struct{}, ch <-chan events.Event) {
	var (
		last    = map[scope]time.Time{} // the start of the last full pass of a scope
		every   = map[scope]time.Duration{scopeTasks: s.pass, scopeObjects: s.pass}
		pending scope               // full passes waiting for their interval
		timer   clock.Timer         // fires when the first of them is due
		due     <-chan time.Time    // timer's channel while armed
		now     = s.clock.Monotonic // the time of the intervals
		armed   = func(d time.Duration) {
			if timer == nil {
				timer = s.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			due = timer.C()
		}
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var c change
		select {
		case <-stop:
			return
		case e := <-ch:
			// A burst of changes is one pass: what is queued behind the
			// first is seen by the same reads.
			c.add(e)
			for drained := false; !drained; {
				select {
				case e := <-ch:
					c.add(e)
				default:
					drained = true
				}
			}
		case <-due:
			due = nil
		}
		pending |= c.full
		var full scope
		wait := time.Duration(-1)
		for _, sc := range []scope{scopeTasks, scopeObjects} {
			if pending&sc == 0 {
				continue
			}
			if left := every[sc] - now().Sub(last[sc]); last[sc].IsZero() || left <= 0 {
				full |= sc
			} else if wait < 0 || left < wait {
				wait = left
			}
		}
		pending &^= full
		if wait >= 0 {
			armed(wait)
		}
		if full == 0 && len(c.tasks) == 0 {
			continue
		}
		start := now()
		for sc := range every {
			if full&sc != 0 {
				last[sc] = start
			}
		}
		read := s.changed(stop, full, c.tasks)
		// A pass costs what it reads: the next full pass of its scope
		// waits passPerRead for each resource this one read.
		for sc := range every {
			if full&sc != 0 {
				every[sc] = max(s.pass, time.Duration(read[sc])*passPerRead)
			}
		}
	}
}

// changed re-reads the subscribed URIs of the scopes full, and those of
// the tasks named with the task lists, and notifies the subscribers of
// those whose answer is no longer the one they last had; it gives up once
// stop is closed (nothing is subscribed any more). It returns how many
// resources of each scope it read.
func (s *subscriptions) changed(stop chan struct{}, full scope, tasks map[int64]bool) map[scope]int {
	s.mu.Lock()
	todo := make(map[string]*watched, len(s.uris))
	for u, w := range s.uris {
		if full&w.scope != 0 || len(tasks) > 0 && w.scope == scopeTasks && (w.task == 0 || tasks[w.task]) {
			todo[u] = w
		}
	}
	s.mu.Unlock()
	read := map[scope]int{}
	for uri, w := range todo {
		select {
		case <-stop:
			return read
		default:
		}
		read[w.scope]++
		d, err := s.digest(w.res, w.op, uri)
		if err != nil {
			s.log.Debug("mcp subscription: reading the resource", "uri", uri, "err", err)
		}
		s.mu.Lock()
		same := w.digest == d
		w.digest = d
		s.mu.Unlock()
		if same {
			continue
		}
		if err := s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			s.log.Warn("mcp subscription: notifying", "uri", uri, "err", err)
		}
	}
	return read
}

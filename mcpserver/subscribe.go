package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/events"
	"github.com/cks-dev/cks/ops"
)

// Resource subscriptions (resources/subscribe, notifications/resources/updated).
// The hub's one change listener (package notifier) feeds its event bus
// (svc.Bus) with every task and object change, whichever process made it;
// one loop per server follows that bus while anything is subscribed, and on
// each change re-reads every subscribed URI once — however many sessions
// hold it — and notifies its subscribers when what the resource answers
// changed. No subscription polls and none listens on its own.

// subscriptions are the URIs the sessions of one server subscribed to.
type subscriptions struct {
	srv *mcp.Server // set once the server exists, before any request
	svc *ops.Services
	log *slog.Logger

	mu      sync.Mutex
	uris    map[string]*watched         // by URI
	known   map[*mcp.ServerSession]bool // sessions whose end is watched
	running bool                        // the loop runs (while uris is not empty)
	stop    chan struct{}               // closed to end the loop when uris empties
}

// watched is one subscribed URI: its resource, its sessions and the digest
// of its last answer.
type watched struct {
	res      resource
	op       ops.Operation
	sessions map[*mcp.ServerSession]bool
	digest   [32]byte
}

func newSubscriptions(svc *ops.Services) *subscriptions {
	log := svc.Logger
	if log == nil {
		log = slog.Default()
	}
	return &subscriptions{svc: svc, log: log, uris: map[string]*watched{}, known: map[*mcp.ServerSession]bool{}}
}

// subscribe is the SubscribeHandler: it reads the resource as the caller —
// so one that does not exist, or that the caller may not read, is refused
// as resources/read refuses it — and adds the session to its subscribers.
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.held(req.Session); n >= MaxSubscriptions && (s.uris[uri] == nil || !s.uris[uri].sessions[req.Session]) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("this session holds %d subscriptions, the most it may: unsubscribe from one first", n)}
	}
	w := s.uris[uri]
	if w == nil {
		w = &watched{res: r, op: op, sessions: map[*mcp.ServerSession]bool{}, digest: digest}
		s.uris[uri] = w
	}
	w.sessions[req.Session] = true
	if !s.known[req.Session] {
		s.known[req.Session] = true
		// A session that ends without unsubscribing is dropped when it ends.
		go func(ss *mcp.ServerSession) {
			ss.Wait() //nolint:errcheck // only its end matters
			s.drop(ss, "")
		}(req.Session)
	}
	if !s.running {
		s.running = true
		s.stop = make(chan struct{})
		go s.loop(s.stop)
	}
	return nil
}

// MaxSubscriptions caps the URIs one session may subscribe to: each is
// read again on every change.
const MaxSubscriptions = 100

// held returns how many URIs ss is subscribed to (s.mu held).
func (s *subscriptions) held(ss *mcp.ServerSession) int {
	n := 0
	for _, w := range s.uris {
		if w.sessions[ss] {
			n++
		}
	}
	return n
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
	if uri == "" {
		delete(s.known, ss)
	}
	for u, w := range s.uris {
		if uri == "" || u == uri {
			delete(w.sessions, ss)
			if len(w.sessions) == 0 {
				delete(s.uris, u)
			}
		}
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
	res, err := readHandler(r, op, s.svc)(auth.WithLocalOperator(context.Background()),
		&mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return [32]byte{}, err
	}
	b, _ := json.Marshal(res.Contents)
	return sha256.Sum256(b), nil
}

// loop follows the bus until stop is closed: on a change of tasks or
// objects it looks at every subscribed URI.
func (s *subscriptions) loop(stop chan struct{}) {
	ch, unsubscribe := s.svc.Bus.Subscribe()
	defer unsubscribe()
	for {
		select {
		case <-stop:
			return
		case e := <-ch:
			// A burst of changes is one pass: what is queued behind the
			// first is seen by the same reads.
			relevant := e.Type == events.TasksChanged || e.Type == events.ObjectsChanged
			for drained := false; !drained; {
				select {
				case e := <-ch:
					relevant = relevant || e.Type == events.TasksChanged || e.Type == events.ObjectsChanged
				default:
					drained = true
				}
			}
			if relevant {
				s.changed(stop)
			}
		}
	}
}

// changed re-reads every subscribed URI and notifies the subscribers of
// those whose answer is no longer the one they last had; it gives up once
// stop is closed (nothing is subscribed any more).
func (s *subscriptions) changed(stop chan struct{}) {
	s.mu.Lock()
	todo := make(map[string]*watched, len(s.uris))
	for u, w := range s.uris {
		todo[u] = w
	}
	s.mu.Unlock()
	for uri, w := range todo {
		select {
		case <-stop:
			return
		default:
		}
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
}

package knowledge

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
)

// Service is the knowledge store of ADR-007 over a driver: objects with a
// status and an append-only transition log, edges, the claims of pipeline
// steps, and the version DAG of every object (Service and
// Service, with the semantics documented there). Every rule is
// here, once for both dialects; the driver only runs the statements.
//
// Claim tokens are made here and only their SHA-256 reaches the database:
// the plain token is in what ClaimObjects and ClaimObject return and
// nowhere else, and every fenced call (touch, release, transition)
// compares hashes.
type Service struct {
	db    driver.Driver
	clock clock.Clock
}

// New returns the knowledge store over db, reading the time of every write
// from clk (the system clock when nil).
func New(db driver.Driver, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.System{}
	}
	return &Service{db: db, clock: clk}
}

// write runs fn in one write transaction with the time of the write. fn
// may run more than once (the driver retries a deadlock), so it only
// assigns its results.
func (s *Service) write(ctx context.Context, fn func(ctx context.Context, ex driver.Executor, now time.Time) error) error {
	return s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		return fn(ctx, ex, driver.Time(s.clock.Now()))
	})
}

// newClaimToken returns a fresh random claim token: claims and task leases
// share one token scheme (128 random bits, hex).
func newClaimToken() string { return driver.NewLeaseToken() }

// hashClaimToken is the stored form of a claim token: its SHA-256, hex.
func hashClaimToken(token string) string { return driver.HashLeaseToken(token) }

// view is the read view of an object row: no claim token (only a claim
// returns one), forked when it has more than one head.
func view(o driver.ObjectRow) cks.Object {
	return cks.Object{
		ID:          o.ID,
		Kind:        o.Kind,
		Title:       o.Title,
		Content:     o.Content,
		ContentHash: o.ContentHash,
		Status:      o.CurrentStatus,
		ClaimedBy:   o.ClaimedBy,
		ClaimedAt:   o.ClaimedAt,
		Round:       o.Round,
		HeadVersion: o.HeadVersion,
		Forked:      o.Heads > 1,
		CreatedBy:   o.CreatedBy,
		CreatedAt:   o.CreatedAt,
		UpdatedAt:   o.UpdatedAt,
	}
}

func edgeView(e driver.EdgeRow) cks.Edge {
	return cks.Edge{ID: e.ID, Src: e.Src, Dst: e.Dst, BaseType: e.BaseType, SemanticType: e.SemanticType,
		Weight: e.Weight, CreatedAt: e.CreatedAt}
}

func entryView(r driver.TransitionRow) cks.TransitionEntry {
	e := cks.TransitionEntry{Seq: r.Seq, ObjectID: r.ObjectID, TS: r.TS, Agent: r.Agent, Action: r.Action,
		TransitionedTo: r.TransitionedTo, ContentHash: r.ContentHash, Round: r.Round}
	if r.ReasoningNodeID != 0 {
		id := r.ReasoningNodeID
		e.ReasoningNodeID = &id
	}
	return e
}

// withoutContent is the update of o that leaves its content as stored: a
// claim or a status change need not send it back.
func withoutContent(o driver.ObjectRow) driver.ObjectRow {
	o.Content = nil
	return o
}

// getForUpdate reads and locks object id (ErrNotFound naming it).
func getForUpdate(ctx context.Context, ex driver.Executor, id int64) (driver.ObjectRow, error) {
	rows, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{id}, Lock: driver.LockUpdate})
	if err != nil {
		return driver.ObjectRow{}, err
	}
	if len(rows) == 0 {
		return driver.ObjectRow{}, fmt.Errorf("object %d: %w", id, cks.ErrNotFound)
	}
	return rows[0], nil
}

// claimed reads and locks object id and checks that token is its current
// claim: the token's hash is the stored one. Otherwise ErrLeaseLost (or
// ErrNotFound).
func claimed(ctx context.Context, ex driver.Executor, id int64, token string) (driver.ObjectRow, error) {
	o, err := getForUpdate(ctx, ex, id)
	if err != nil {
		return o, err
	}
	if token == "" || o.ClaimToken == "" ||
		subtle.ConstantTimeCompare([]byte(hashClaimToken(token)), []byte(o.ClaimToken)) != 1 {
		return o, fmt.Errorf("object %d (now %q, claimed by %q): %w", id, o.CurrentStatus, o.ClaimedBy, cks.ErrLeaseLost)
	}
	return o, nil
}

// insertObjects stores ns (validated: content canonical), each with its
// first version (number 1, no parents, by its creator, the only head) and,
// when it has a status, its "created" log entry by its creator. It does not
// publish.
func insertObjects(ctx context.Context, ex driver.Executor, now time.Time, ns []NewObject) ([]cks.Object, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	rows := make([]driver.ObjectRow, len(ns))
	for i, n := range ns {
		content, hash, err := CanonicalContent(n.Content, "content")
		if err != nil {
			return nil, err
		}
		rows[i] = driver.ObjectRow{Kind: n.Kind, Title: n.Title, Content: content, ContentHash: hash, CurrentStatus: n.Status,
			HeadVersion: 1, Heads: 1, CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now}
	}
	ids, err := ex.ObjectInsertMany(ctx, rows)
	if err != nil {
		return nil, err
	}
	versions := make([]driver.VersionRow, len(rows))
	var log []driver.TransitionRow
	out := make([]cks.Object, len(rows))
	for i := range rows {
		o := &rows[i]
		o.ID = ids[i]
		versions[i] = driver.VersionRow{ObjectID: o.ID, Version: 1, Content: o.Content, ContentHash: o.ContentHash,
			Author: o.CreatedBy, CreatedAt: now, IsHead: true}
		if o.CurrentStatus != "" {
			log = append(log, driver.TransitionRow{ObjectID: o.ID, TS: now, Agent: o.CreatedBy, Action: "created",
				TransitionedTo: o.CurrentStatus, ContentHash: o.ContentHash, Round: o.Round})
		}
		out[i] = view(*o)
	}
	if _, err := ex.VersionInsertMany(ctx, versions); err != nil {
		return nil, err
	}
	if err := ex.TransitionInsertMany(ctx, log); err != nil {
		return nil, err
	}
	return out, nil
}

// objectRef is an object id given in the input, and the field naming it.
type objectRef struct {
	field string
	id    int64
}

// checkObjects returns a FieldError naming the first of refs whose object
// does not exist. (Objects are never deleted, so what it sees stays true;
// the foreign keys check it again.)
func checkObjects(ctx context.Context, ex driver.Executor, refs []objectRef) error {
	if len(refs) == 0 {
		return nil
	}
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.id
	}
	found, err := ex.ObjectExistMany(ctx, ids)
	if err != nil {
		return err
	}
	for _, r := range refs {
		if _, ok := slices.BinarySearch(found, r.id); !ok {
			return &cks.FieldError{Field: r.field, Expected: fmt.Sprintf("the id of an existing object (no object %d)", r.id)}
		}
	}
	return nil
}

// edgeRefs returns the object references of edges, fields named edges[i].src
// and edges[i].dst.
func edgeRefs(edges []NewEdge) []objectRef {
	refs := make([]objectRef, 0, 2*len(edges))
	for i, e := range edges {
		refs = append(refs, objectRef{fmt.Sprintf("edges[%d].src", i), e.Src},
			objectRef{fmt.Sprintf("edges[%d].dst", i), e.Dst})
	}
	return refs
}

func edgeRow(src, dst int64, base, semantic string, weight *float64, now time.Time) driver.EdgeRow {
	return driver.EdgeRow{Src: src, Dst: dst, BaseType: base, SemanticType: semantic, Weight: weight, CreatedAt: now}
}

// insertEdges writes edges (their objects checked to exist) and returns
// them with their ids.
func insertEdges(ctx context.Context, ex driver.Executor, rows []driver.EdgeRow) ([]cks.Edge, error) {
	ids, err := ex.EdgeInsertMany(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := make([]cks.Edge, len(rows))
	for i, r := range rows {
		r.ID = ids[i]
		out[i] = edgeView(r)
	}
	return out, nil
}

// attachmentObjects returns the objects of attachments (validated), each
// created by agent unless it names its creator.
func attachmentObjects(attach []Attachment, agent string) []NewObject {
	ns := make([]NewObject, len(attach))
	for i, a := range attach {
		ns[i] = a.Object
		if ns[i].CreatedBy == "" {
			ns[i].CreatedBy = agent
		}
	}
	return ns
}

// attachmentEdges returns the edges of attachments made as objects: each
// from its object to the subject, then its links.
func attachmentEdges(attach []Attachment, objects []cks.Object, subject int64, now time.Time) []driver.EdgeRow {
	var rows []driver.EdgeRow
	for i, a := range attach {
		src := objects[i].ID
		rows = append(rows, edgeRow(src, subject, a.BaseType, a.SemanticType, a.Weight, now))
		for _, l := range a.Links {
			rows = append(rows, edgeRow(src, l.Dst, l.BaseType, l.SemanticType, l.Weight, now))
		}
	}
	return rows
}

// CreateObject stores a new object (content canonicalised and hashed).
// With a Status, the creation is logged (agent CreatedBy, action
// "created") and TopicObjects is published.
func (s *Service) CreateObject(ctx context.Context, n NewObject) (cks.Object, error) {
	n, err := n.Validate("")
	if err != nil {
		return cks.Object{}, err
	}
	var out cks.Object
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		objs, err := insertObjects(ctx, ex, now, []NewObject{n})
		if err != nil {
			return err
		}
		out = objs[0]
		if n.Status == "" {
			return nil
		}
		return ex.Notify(ctx, cks.TopicObjects)
	})
	if err != nil {
		return cks.Object{}, err
	}
	return out, nil
}

// GetObject returns the object with its log and edges.
//
// It reads the object, its log and its edges in one read-only snapshot.
func (s *Service) GetObject(ctx context.Context, id int64) (cks.Object, error) {
	objs, err := s.GetObjects(ctx, []int64{id})
	if err != nil {
		return cks.Object{}, err
	}
	return objs[0], nil
}

// GetObjects returns the objects ids, each once, ascending by id, with
// their logs and edges, read in one read-only snapshot in three reads
// however many they are; an unknown id is ErrNotFound naming it.
func (s *Service) GetObjects(ctx context.Context, ids []int64) ([]cks.Object, error) {
	var out []cks.Object
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		var err error
		out, err = readObjects(ctx, ex, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readObjects reads the objects ids, each once, ascending by id, with
// their logs and edges (each edge under both its ends), in three reads; an
// unknown id is ErrNotFound naming it.
func readObjects(ctx context.Context, ex driver.Executor, ids []int64) ([]cks.Object, error) {
	ids = sortedUnique(ids)
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: ids})
	if err != nil {
		return nil, err
	}
	out := make([]cks.Object, len(rows))
	at := make(map[int64]int, len(rows))
	for i, r := range rows {
		out[i], at[r.ID] = view(r), i
	}
	for _, id := range ids {
		if _, ok := at[id]; !ok {
			return nil, fmt.Errorf("object %d: %w", id, cks.ErrNotFound)
		}
	}
	log, err := ex.TransitionListMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, r := range log {
		o := &out[at[r.ObjectID]]
		o.Log = append(o.Log, entryView(r))
	}
	edges, err := ex.EdgeListOfMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, e := range edges {
		if i, ok := at[e.Src]; ok {
			out[i].Edges = append(out[i].Edges, edgeView(e))
		}
		if i, ok := at[e.Dst]; ok && e.Dst != e.Src {
			out[i].Edges = append(out[i].Edges, edgeView(e))
		}
	}
	return out, nil
}

// View returns object id as get_object shows it: with its log and edges,
// its head versions, and every object linked to it by an edge (ascending by
// id, each with its log and edges) — read in one read-only snapshot, in
// seven reads however many objects are linked.
func (s *Service) View(ctx context.Context, id int64) (cks.ObjectView, error) {
	v, _, err := s.view(ctx, id, false)
	return v, err
}

// ViewWithVersions is View with every version of the object besides,
// ascending by number (the studio's object page draws the version graph),
// read in the same snapshot and as many reads.
func (s *Service) ViewWithVersions(ctx context.Context, id int64) (cks.ObjectView, []cks.Version, error) {
	return s.view(ctx, id, true)
}

// view reads View, and every version of the object when all.
func (s *Service) view(ctx context.Context, id int64, all bool) (cks.ObjectView, []cks.Version, error) {
	var (
		out      cks.ObjectView
		versions []cks.Version
	)
	err := s.db.WithTx(ctx, driver.TxOptions{ReadOnly: true}, func(ctx context.Context, ex driver.Executor) error {
		objs, err := readObjects(ctx, ex, []int64{id})
		if err != nil {
			return err
		}
		o := objs[0]
		v := cks.ObjectView{Object: o, Heads: []cks.Version{}, Reasoning: []cks.Object{}}
		rows, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: id, HeadsOnly: !all})
		if err != nil {
			return fmt.Errorf("heads of object %d: %w", id, err)
		}
		versions = nil
		for _, r := range rows {
			if all {
				versions = append(versions, versionView(r))
			}
			if r.IsHead {
				v.Heads = append(v.Heads, versionView(r))
			}
		}
		v.Forked = len(v.Heads) > 1 || o.Forked
		v.Object.Forked = v.Forked
		var linked []int64
		for _, e := range o.Edges {
			for _, end := range []int64{e.Src, e.Dst} {
				if end != id {
					linked = append(linked, end)
				}
			}
		}
		reasoning, err := readObjects(ctx, ex, linked)
		if err != nil {
			return fmt.Errorf("objects linked to %d: %w", id, err)
		}
		v.Reasoning = append(v.Reasoning, reasoning...)
		out = v
		return nil
	})
	if err != nil {
		return cks.ObjectView{}, nil, err
	}
	return out, versions, nil
}

// ListObjects returns one page of objects (without log and edges).
func (s *Service) ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error) {
	f, err := f.Validate()
	if err != nil {
		return cks.ObjectPage{}, err
	}
	rows, err := s.db.Executor().ObjectList(ctx, driver.ObjectListParams{Kinds: f.Kinds, Statuses: f.Statuses,
		Unclaimed: f.Unclaimed, Match: cks.SearchKey(f.Text), After: f.After, Limit: f.Limit + 1})
	if err != nil {
		return cks.ObjectPage{}, err
	}
	// A page ends at f.Limit objects or at what a cks.PageBudget holds,
	// whichever comes first.
	page := cks.ObjectPage{Objects: make([]cks.Object, 0, len(rows))} // "objects": [] in JSON
	var budget cks.PageBudget
	for _, r := range rows {
		size := 400 + len(r.Content) + cks.EncodedLen(r.Title) + cks.EncodedLen(r.Kind) + cks.EncodedLen(r.CreatedBy)
		if len(page.Objects) == f.Limit || !budget.Fits(size) {
			page.Next = page.Objects[len(page.Objects)-1].ID
			break
		}
		page.Objects = append(page.Objects, view(r))
	}
	return page, nil
}

// AddEdges writes edges between existing objects (a missing one is a
// FieldError naming edges[i].src or .dst), all or none.
func (s *Service) AddEdges(ctx context.Context, edges []NewEdge) ([]cks.Edge, error) {
	for i, e := range edges {
		if err := e.validate(fmt.Sprintf("edges[%d].", i)); err != nil {
			return nil, err
		}
	}
	if len(edges) == 0 {
		return []cks.Edge{}, nil
	}
	var out []cks.Edge
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		if err := checkObjects(ctx, ex, edgeRefs(edges)); err != nil {
			return err
		}
		rows := make([]driver.EdgeRow, len(edges))
		for i, e := range edges {
			rows[i] = edgeRow(e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight, now)
		}
		var err error
		out, err = insertEdges(ctx, ex, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// validWorker reports a FieldError naming worker when it is not text a
// backend stores (cks.ValidateText) or blank.
func validWorker(worker string) error {
	if err := cks.ValidateText("worker", worker); err != nil {
		return err
	}
	if strings.TrimSpace(worker) == "" {
		return &cks.FieldError{Field: "worker", Expected: "a non-empty worker name"}
	}
	return nil
}

// ClaimObjects claims up to n unclaimed objects of status for worker,
// oldest first (Postgres SKIP LOCKED; SQLite a conditional update on
// claimed_by being empty): each gets claimed_by = worker, a fresh
// claim token and claimed_at = now. No two calls ever claim one object.
//
// On Postgres the candidates are locked SKIP LOCKED, so concurrent claimers
// never wait for each other and never claim one object; on SQLite the one
// writer serialises them. Each claimed object gets its own token.
func (s *Service) ClaimObjects(ctx context.Context, status, worker string, n int) ([]cks.Object, error) {
	if err := cks.ValidateText("status", status); err != nil {
		return nil, err
	}
	switch {
	case status == "":
		return nil, &cks.FieldError{Field: "status", Expected: "the status to claim objects of"}
	case validWorker(worker) != nil:
		return nil, validWorker(worker)
	case n < 1 || n > cks.MaxListLimit:
		return nil, &cks.FieldError{Field: "n", Expected: fmt.Sprintf("an integer from 1 to %d", cks.MaxListLimit)}
	}
	var out []cks.Object
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		rows, err := ex.ObjectClaimable(ctx, driver.ObjectClaimableParams{Status: status, Limit: n})
		if err != nil {
			return err
		}
		out = make([]cks.Object, len(rows))
		updates := make([]driver.ObjectRow, len(rows))
		for i, o := range rows {
			token := newClaimToken()
			o.ClaimedBy, o.ClaimToken, o.ClaimedAt, o.UpdatedAt = worker, hashClaimToken(token), now, now
			updates[i] = withoutContent(o)
			out[i] = view(o)
			out[i].ClaimToken = token
		}
		_, err = ex.ObjectUpdateMany(ctx, updates)
		return err // a claim makes nothing claimable: no publish
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClaimObject claims the one object id for worker if it is unclaimed
// and its status is one of statuses (the sequential mode drives one
// object end to end). ErrConflict names the holder when it is claimed,
// or the status when it is not one of statuses; ErrNotFound when there
// is no such object.
//
// It waits for a transaction that holds the object (it names one object,
// there is nothing to skip to) and then decides on what that transaction
// left.
func (s *Service) ClaimObject(ctx context.Context, id int64, worker string, statuses []string) (cks.Object, error) {
	if err := validWorker(worker); err != nil {
		return cks.Object{}, err
	}
	if err := cks.ValidateTexts("statuses", statuses); err != nil {
		return cks.Object{}, err
	}
	if len(statuses) == 0 {
		return cks.Object{}, &cks.FieldError{Field: "statuses", Expected: "the statuses the object may be claimed in (at least one)"}
	}
	var out cks.Object
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		o, err := getForUpdate(ctx, ex, id)
		if err != nil {
			return err
		}
		switch {
		case o.ClaimedBy != "":
			return fmt.Errorf("object %d is claimed by %q: %w", id, o.ClaimedBy, cks.ErrConflict)
		case !slices.Contains(statuses, o.CurrentStatus):
			return fmt.Errorf("object %d is %q, not one of %q: %w", id, o.CurrentStatus, statuses, cks.ErrConflict)
		}
		token := newClaimToken()
		o.ClaimedBy, o.ClaimToken, o.ClaimedAt, o.UpdatedAt = worker, hashClaimToken(token), now, now
		if _, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{withoutContent(o)}); err != nil {
			return err
		}
		out = view(o)
		out.ClaimToken = token
		return nil
	})
	if err != nil {
		return cks.Object{}, err
	}
	return out, nil
}

// TouchClaim renews a claim (claimed_at = now) so the lease reaper does
// not release it while a long model call runs. ErrLeaseLost when the
// token is no longer the object's claim.
//
// It publishes nothing: the claim's holder does not change.
func (s *Service) TouchClaim(ctx context.Context, id int64, claimToken string) error {
	if err := cks.ValidateText("claim_token", claimToken); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		o, err := claimed(ctx, ex, id, claimToken)
		if err != nil {
			return err
		}
		o.ClaimedAt, o.UpdatedAt = now, now
		_, err = ex.ObjectUpdateMany(ctx, []driver.ObjectRow{withoutContent(o)})
		return err
	})
}

// release ends o's claim: its token stops being current, so the claimer's
// next call fails with ErrLeaseLost.
func release(o *driver.ObjectRow, now time.Time) {
	o.ClaimedBy, o.ClaimToken, o.ClaimedAt, o.UpdatedAt = "", "", time.Time{}, now
}

// ReleaseClaim gives a claim back without a transition (nothing was
// done). ErrLeaseLost when the token is no longer the object's claim.
//
// It publishes TopicObjects: the object is claimable again.
func (s *Service) ReleaseClaim(ctx context.Context, id int64, claimToken string) error {
	if err := cks.ValidateText("claim_token", claimToken); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		o, err := claimed(ctx, ex, id, claimToken)
		if err != nil {
			return err
		}
		release(&o, now)
		if _, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{withoutContent(o)}); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicObjects)
	})
}

// TransitionObject applies t (validated with ObjectTransition.Validate) to
// the object claimed with claimToken, in one transaction: it checks the
// claim (ErrLeaseLost) and that the status is still t.From
// (ErrConflict), creates the attachments and their edges, writes the
// edges, replaces the content (new hash), increments the round when
// asked, sets the status to t.To, clears the claim, appends the log
// entry (pointing to the reasoning node) and one per SetStatus change,
// and publishes TopicObjects. It returns the object as it now is
// (without log and edges) and the created attachments, in order.
//
// in one transaction, the claim and status checks, then (every referenced
// object known to exist before anything is written) the attachments with
// their edges and links, the edges, the content as a new version based on the
// latest one, the round, the status, the end of the claim, the log entries
// (the transition's and one per SetStatus change, all pointing to the
// reasoning node), and the notification.
func (s *Service) TransitionObject(ctx context.Context, id int64, claimToken string, t ObjectTransition) (cks.Object, []cks.Object, error) {
	t, err := t.Validate()
	if err != nil {
		return cks.Object{}, nil, err
	}
	if err := cks.ValidateText("claim_token", claimToken); err != nil {
		return cks.Object{}, nil, err
	}
	var (
		content []byte
		hash    string
	)
	if len(t.Content) > 0 {
		if content, hash, err = CanonicalContent(t.Content, "content"); err != nil {
			return cks.Object{}, nil, err
		}
	}
	var (
		out      cks.Object
		attached []cks.Object
	)
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		attached = nil
		o, err := claimed(ctx, ex, id, claimToken)
		if err != nil {
			return err
		}
		if o.CurrentStatus != t.From {
			return fmt.Errorf("object %d is %q, not %q: %w", id, o.CurrentStatus, t.From, cks.ErrConflict)
		}
		// Every object the input names must exist before anything is written.
		var refs []objectRef
		for i, a := range t.Attach {
			for j, l := range a.Links {
				refs = append(refs, objectRef{fmt.Sprintf("attach[%d].links[%d].dst", i, j), l.Dst})
			}
		}
		refs = append(refs, edgeRefs(t.Edges)...)
		for i, c := range t.SetStatus {
			field := fmt.Sprintf("set_status[%d].object_id", i)
			if c.ObjectID == id {
				return &cks.FieldError{Field: field,
					Expected: fmt.Sprintf("the id of another object (%d is the transitioned object: its status is to)", id)}
			}
			refs = append(refs, objectRef{field, c.ObjectID})
		}
		if err := checkObjects(ctx, ex, refs); err != nil {
			return err
		}

		made, err := insertObjects(ctx, ex, now, attachmentObjects(t.Attach, t.Agent))
		if err != nil {
			return err
		}
		edges := attachmentEdges(t.Attach, made, id, now)
		for _, e := range t.Edges {
			edges = append(edges, edgeRow(e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight, now))
		}
		if _, err := insertEdges(ctx, ex, edges); err != nil {
			return err
		}

		if content != nil {
			// A new version based on the latest one (always a head), by the
			// step; the claim's lock on the row orders it with version writes.
			if err := writeVersion(ctx, ex, now, &o, o.HeadVersion, content, hash, t.Agent); err != nil {
				return err
			}
		}
		if t.NextRound {
			o.Round++
		}
		o.CurrentStatus = t.To
		release(&o, now)
		update := o
		if content == nil {
			update = withoutContent(o)
		}
		if _, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{update}); err != nil {
			return err
		}
		var reasoning int64
		if t.Reasoning >= 0 {
			reasoning = made[t.Reasoning].ID
		}
		log := []driver.TransitionRow{{ObjectID: id, TS: now, Agent: t.Agent, Action: t.Action,
			TransitionedTo: t.To, ReasoningNodeID: reasoning, ContentHash: o.ContentHash, Round: o.Round}}
		changes, err := setStatus(ctx, ex, now, t, reasoning)
		if err != nil {
			return err
		}
		if err := ex.TransitionInsertMany(ctx, append(log, changes...)); err != nil {
			return err
		}
		out, attached = view(o), made
		return ex.Notify(ctx, cks.TopicObjects)
	})
	if err != nil {
		return cks.Object{}, nil, err
	}
	return out, attached, nil
}

// setStatus applies the SetStatus changes of t (their objects known to
// exist) and returns their log entries, by t's agent and pointing to the
// transition's reasoning node: it is why the step changed them (ADR-007
// §4). Changes apply in order; one object may change twice.
func setStatus(ctx context.Context, ex driver.Executor, now time.Time, t ObjectTransition, reasoning int64) ([]driver.TransitionRow, error) {
	if len(t.SetStatus) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(t.SetStatus))
	for i, c := range t.SetStatus {
		ids[i] = c.ObjectID
	}
	rows, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: ids, Lock: driver.LockUpdate})
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*driver.ObjectRow, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	log := make([]driver.TransitionRow, 0, len(t.SetStatus))
	for _, c := range t.SetStatus {
		o, ok := byID[c.ObjectID]
		if !ok {
			return nil, fmt.Errorf("object %d: %w", c.ObjectID, cks.ErrNotFound)
		}
		o.CurrentStatus, o.UpdatedAt = c.Status, now
		log = append(log, driver.TransitionRow{ObjectID: o.ID, TS: now, Agent: t.Agent, Action: c.Action,
			TransitionedTo: c.Status, ReasoningNodeID: reasoning, ContentHash: o.ContentHash, Round: o.Round})
	}
	updates := make([]driver.ObjectRow, len(rows))
	for i, o := range rows {
		updates[i] = withoutContent(o)
	}
	if _, err := ex.ObjectUpdateMany(ctx, updates); err != nil {
		return nil, err
	}
	return log, nil
}

// ReleaseStaleClaims releases every claim taken (or last touched) at or
// before olderThan, appending no log entry (nothing happened), and
// publishes TopicObjects when it released any. It returns how many.
//
// On Postgres, claims locked by a concurrent touch, release or transition are
// skipped (SKIP LOCKED): that writer is on them.
func (s *Service) ReleaseStaleClaims(ctx context.Context, olderThan time.Time) (int, error) {
	olderThan = driver.Time(olderThan)
	var n int
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		rows, err := ex.ObjectClaimedBefore(ctx, driver.ObjectClaimedBeforeParams{Before: olderThan})
		if err != nil {
			return err
		}
		n = len(rows)
		if n == 0 {
			return nil
		}
		for i := range rows {
			release(&rows[i], now)
			rows[i] = withoutContent(rows[i])
		}
		if _, err := ex.ObjectUpdateMany(ctx, rows); err != nil {
			return err
		}
		return ex.Notify(ctx, cks.TopicObjects)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

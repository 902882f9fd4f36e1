package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/store"
)

var _ store.Knowledge = (*Store)(nil)

// objectColumns is the column list every object query reads, in scanObject's order.
const objectColumns = `object_id, kind, title, content, content_hash, current_status, claimed_by, claim_token,
	claimed_at, round, head_version, heads, created_by, created_at, updated_at`

// releaseObjectClaim is the SET fragment that ends an object's claim: the
// token stops being current, so its holder's next call fails with ErrLeaseLost.
const releaseObjectClaim = `claimed_by = '', claim_token = '', claimed_at = NULL`

func scanObject(sc scanner) (store.Object, error) {
	var (
		o                store.Object
		content          string
		claimedAt        sql.NullString
		created, updated string
		heads            int
	)
	err := sc.Scan(&o.ID, &o.Kind, &o.Title, &content, &o.ContentHash, &o.Status, &o.ClaimedBy, &o.ClaimToken,
		&claimedAt, &o.Round, &o.HeadVersion, &heads, &o.CreatedBy, &created, &updated)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return o, err
		}
		return o, fmt.Errorf("sqlite: scan object: %w", err)
	}
	o.Content = []byte(content)
	o.Forked = heads > 1
	if claimedAt.Valid {
		if o.ClaimedAt, err = parseTime(claimedAt.String); err != nil {
			return o, err
		}
	}
	if o.CreatedAt, err = parseTime(created); err != nil {
		return o, err
	}
	if o.UpdatedAt, err = parseTime(updated); err != nil {
		return o, err
	}
	return o, nil
}

// scanObjects reads every row of rows (objectColumns) and closes rows.
func scanObjects(rows *sql.Rows, what string) ([]store.Object, error) {
	return collect(rows, what, scanObject)
}

// getObject reads one object without its log and edges.
func getObject(ctx context.Context, q querier, id int64) (store.Object, error) {
	o, err := scanObject(q.QueryRowContext(ctx, `SELECT `+objectColumns+` FROM cks_objects WHERE object_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("object %d: %w", id, store.ErrNotFound)
	}
	return o, err
}

// objectExists reports whether object id exists.
func objectExists(ctx context.Context, q querier, id int64) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM cks_objects WHERE object_id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: object %d: %w", id, err)
	}
	return true, nil
}

// mustExist returns a FieldError naming field when object id does not exist.
func mustExist(ctx context.Context, q querier, id int64, field string) error {
	ok, err := objectExists(ctx, q, id)
	if err != nil {
		return err
	}
	if !ok {
		return &store.FieldError{Field: field, Expected: fmt.Sprintf("the id of an existing object (no object %d)", id)}
	}
	return nil
}

// claimedObject reads object id in tx and checks that token is its current
// claim token; otherwise ErrLeaseLost (or ErrNotFound).
func claimedObject(ctx context.Context, q querier, id int64, token string) (store.Object, error) {
	if err := store.ValidateText("claim_token", token); err != nil {
		return store.Object{}, err
	}
	o, err := getObject(ctx, q, id)
	if err != nil {
		return o, err
	}
	if token == "" || o.ClaimToken != token {
		return o, fmt.Errorf("object %d (now %q, claimed by %q): %w", id, o.Status, o.ClaimedBy, store.ErrLeaseLost)
	}
	return o, nil
}

// appendLog appends e to cks_transition_log and returns it with its seq.
func appendLog(ctx context.Context, tx *wtx, e store.TransitionEntry) (store.TransitionEntry, error) {
	err := tx.QueryRowContext(ctx, `INSERT INTO cks_transition_log (object_id, ts, agent, action, transitioned_to,
	reasoning_node_id, content_hash, round) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
		e.ObjectID, fmtTime(e.TS), e.Agent, e.Action, e.TransitionedTo, e.ReasoningNodeID, e.ContentHash, e.Round).Scan(&e.Seq)
	if err != nil {
		return e, fmt.Errorf("sqlite: transition log of object %d: %w", e.ObjectID, err)
	}
	return e, nil
}

// insertObject stores the validated n (content canonical) and, when it has
// a status, logs its creation (agent n.CreatedBy, action "created"). It does
// not publish: callers do, once per transaction.
func insertObject(ctx context.Context, tx *wtx, now time.Time, n store.NewObject, field string) (store.Object, error) {
	content, hash, err := store.CanonicalContent(n.Content, field)
	if err != nil {
		return store.Object{}, err
	}
	o := store.Object{Kind: n.Kind, Title: n.Title, Content: content, ContentHash: hash, Status: n.Status,
		CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now}
	err = tx.QueryRowContext(ctx, `INSERT INTO cks_objects (kind, title, content, content_hash, current_status,
	created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING object_id`,
		o.Kind, o.Title, string(o.Content), o.ContentHash, o.Status, o.CreatedBy, fmtTime(now), fmtTime(now)).Scan(&o.ID)
	if err != nil {
		return o, fmt.Errorf("sqlite: create object: %w", err)
	}
	v, err := insertVersion(ctx, tx, now, o.ID, nil, o.Content, o.ContentHash, o.CreatedBy)
	if err != nil {
		return o, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cks_objects SET head_version = ? WHERE object_id = ?`, v.Version, o.ID); err != nil {
		return o, fmt.Errorf("sqlite: create object %d: %w", o.ID, err)
	}
	o.HeadVersion = v.Version
	if o.Status != "" {
		if _, err := appendLog(ctx, tx, store.TransitionEntry{ObjectID: o.ID, TS: now, Agent: o.CreatedBy,
			Action: "created", TransitionedTo: o.Status, ContentHash: o.ContentHash}); err != nil {
			return o, err
		}
	}
	return o, nil
}

// insertEdge stores e, whose ends the caller checked.
func insertEdge(ctx context.Context, tx *wtx, now time.Time, e store.NewEdge) (store.Edge, error) {
	out := store.Edge{Src: e.Src, Dst: e.Dst, BaseType: e.BaseType, SemanticType: e.SemanticType, CreatedAt: now}
	if e.Weight != nil {
		w := *e.Weight
		out.Weight = &w
	}
	err := tx.QueryRowContext(ctx, `INSERT INTO cks_edges (src, dst, base_type, semantic_type, weight, created_at)
VALUES (?, ?, ?, ?, ?, ?) RETURNING edge_id`, e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight, fmtTime(now)).Scan(&out.ID)
	if err != nil {
		return out, fmt.Errorf("sqlite: edge %d → %d: %w", e.Src, e.Dst, err)
	}
	return out, nil
}

// insertAttachment creates the validated attachment at (fields named with
// prefix) with its edge to subject and its links, whose ends the caller
// checked. The object's creator defaults to agent.
func insertAttachment(ctx context.Context, tx *wtx, now time.Time, subject int64, at store.Attachment, prefix, agent string) (store.Object, error) {
	obj := at.Object
	if obj.CreatedBy == "" {
		obj.CreatedBy = agent
	}
	o, err := insertObject(ctx, tx, now, obj, prefix+"object.content")
	if err != nil {
		return o, err
	}
	if _, err := insertEdge(ctx, tx, now, store.NewEdge{Src: o.ID, Dst: subject, BaseType: at.BaseType,
		SemanticType: at.SemanticType, Weight: at.Weight}); err != nil {
		return o, err
	}
	for _, l := range at.Links {
		if _, err := insertEdge(ctx, tx, now, store.NewEdge{Src: o.ID, Dst: l.Dst, BaseType: l.BaseType,
			SemanticType: l.SemanticType, Weight: l.Weight}); err != nil {
			return o, err
		}
	}
	return o, nil
}

// checkEdgeEnds returns a FieldError naming edges[i].src or .dst for the
// first end of edges that is not an existing object. (Objects are never
// deleted, so what it sees stays true; the foreign keys check it again.)
func checkEdgeEnds(ctx context.Context, q querier, edges []store.NewEdge) error {
	for i, e := range edges {
		if err := mustExist(ctx, q, e.Src, fmt.Sprintf("edges[%d].src", i)); err != nil {
			return err
		}
		if err := mustExist(ctx, q, e.Dst, fmt.Sprintf("edges[%d].dst", i)); err != nil {
			return err
		}
	}
	return nil
}

// CreateObject implements store.Knowledge.
func (s *Store) CreateObject(ctx context.Context, n store.NewObject) (store.Object, error) {
	n, err := n.Validate("")
	if err != nil {
		return store.Object{}, err
	}
	var out store.Object
	err = s.write(ctx, "create object", func(tx *wtx, now time.Time) error {
		var err error
		if out, err = insertObject(ctx, tx, now, n, "content"); err != nil {
			return err
		}
		if out.Status != "" {
			return publish(ctx, tx, store.TopicObjects)
		}
		return nil
	})
	if err != nil {
		return store.Object{}, err
	}
	return out, nil
}

// GetObject implements store.Knowledge.
func (s *Store) GetObject(ctx context.Context, id int64) (store.Object, error) {
	o, err := getObject(ctx, s.reader, id)
	if err != nil {
		return o, err
	}
	o.ClaimToken = "" // only the claim's answer carries it
	if o.Log, err = logOf(ctx, s.reader, id); err != nil {
		return o, err
	}
	if o.Edges, err = edgesOf(ctx, s.reader, id); err != nil {
		return o, err
	}
	return o, nil
}

func logOf(ctx context.Context, q querier, id int64) ([]store.TransitionEntry, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, object_id, ts, agent, action, transitioned_to, reasoning_node_id,
	content_hash, round FROM cks_transition_log WHERE object_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: transition log of object %d: %w", id, err)
	}
	defer rows.Close()
	var out []store.TransitionEntry
	for rows.Next() {
		var (
			e         store.TransitionEntry
			ts        string
			reasoning sql.NullInt64
		)
		if err := rows.Scan(&e.Seq, &e.ObjectID, &ts, &e.Agent, &e.Action, &e.TransitionedTo, &reasoning,
			&e.ContentHash, &e.Round); err != nil {
			return nil, fmt.Errorf("sqlite: transition log of object %d: %w", id, err)
		}
		if reasoning.Valid {
			r := reasoning.Int64
			e.ReasoningNodeID = &r
		}
		if e.TS, err = parseTime(ts); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: transition log of object %d: %w", id, err)
	}
	return out, nil
}

func edgesOf(ctx context.Context, q querier, id int64) ([]store.Edge, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+edgeColumns+` FROM cks_edges WHERE src = ? OR dst = ? ORDER BY edge_id`, id, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: edges of object %d: %w", id, err)
	}
	return scanEdges(rows, fmt.Sprintf("edges of object %d", id))
}

// edgeColumns is the column list edge queries read, in scanEdge's order.
const edgeColumns = `edge_id, src, dst, base_type, semantic_type, weight, created_at`

// scanEdge reads one edge (edgeColumns).
func scanEdge(sc scanner) (store.Edge, error) {
	var (
		e      store.Edge
		weight sql.NullFloat64
		at     string
	)
	if err := sc.Scan(&e.ID, &e.Src, &e.Dst, &e.BaseType, &e.SemanticType, &weight, &at); err != nil {
		return e, fmt.Errorf("sqlite: scan edge: %w", err)
	}
	if weight.Valid {
		w := weight.Float64
		e.Weight = &w
	}
	var err error
	e.CreatedAt, err = parseTime(at)
	return e, err
}

// scanEdges reads every row of rows (edgeColumns) and closes rows.
func scanEdges(rows *sql.Rows, what string) ([]store.Edge, error) {
	return collect(rows, what, scanEdge)
}

// ListObjects implements store.Knowledge.
func (s *Store) ListObjects(ctx context.Context, f store.ObjectFilter) (store.ObjectPage, error) {
	f, err := f.Validate()
	if err != nil {
		return store.ObjectPage{}, err
	}
	a := &args{}
	q := `SELECT ` + objectColumns + ` FROM cks_objects WHERE object_id > ` + a.add(f.After)
	if len(f.Kinds) > 0 {
		q += ` AND kind IN ` + a.list(f.Kinds)
	}
	if len(f.Statuses) > 0 {
		q += ` AND current_status IN ` + a.list(f.Statuses)
	}
	if f.Unclaimed {
		q += ` AND claimed_by = ''`
	}
	q += ` ORDER BY object_id LIMIT ` + a.add(f.Limit+1)
	rows, err := s.reader.QueryContext(ctx, q, a.vals...)
	if err != nil {
		return store.ObjectPage{}, fmt.Errorf("sqlite: list objects: %w", err)
	}
	objs, err := scanObjects(rows, "list objects")
	if err != nil {
		return store.ObjectPage{}, err
	}
	for i := range objs {
		objs[i].ClaimToken = "" // only the claim's answer carries it
	}
	page := store.ObjectPage{Objects: objs}
	if len(page.Objects) > f.Limit {
		page.Objects = page.Objects[:f.Limit]
		page.Next = page.Objects[f.Limit-1].ID
	}
	return page, nil
}

// AddEdges implements store.Knowledge.
func (s *Store) AddEdges(ctx context.Context, edges []store.NewEdge) ([]store.Edge, error) {
	for i, e := range edges {
		if err := e.Validate(fmt.Sprintf("edges[%d].", i)); err != nil {
			return nil, err
		}
	}
	if len(edges) == 0 {
		return nil, nil
	}
	var out []store.Edge
	err := s.write(ctx, "add edges", func(tx *wtx, now time.Time) error {
		out = nil
		if err := checkEdgeEnds(ctx, tx, edges); err != nil {
			return err
		}
		for _, e := range edges {
			ed, err := insertEdge(ctx, tx, now, e)
			if err != nil {
				return err
			}
			out = append(out, ed)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClaimObjects implements store.Knowledge: one conditional UPDATE of the
// oldest unclaimed objects of status (an empty claimed_by), each with a fresh
// random token. The writer is single and every write is BEGIN IMMEDIATE, so
// two handles (or processes) never claim one object.
func (s *Store) ClaimObjects(ctx context.Context, status, worker string, n int) ([]store.Object, error) {
	if err := validStatus("status", status); err != nil {
		return nil, err
	}
	if err := store.ValidateClaim(worker, n, time.Millisecond); err != nil { // object claims have no lease
		return nil, err
	}
	var out []store.Object
	err := s.write(ctx, "claim objects", func(tx *wtx, now time.Time) error {
		rows, err := tx.QueryContext(ctx, claimObjectsSQL, worker, fmtTime(now), fmtTime(now), status, n)
		if err != nil {
			return fmt.Errorf("sqlite: claim objects: %w", err)
		}
		out, err = scanObjects(rows, "claim objects")
		return err // a claim makes nothing claimable: no publish
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order: oldest first, as the claim picked them.
	slices.SortFunc(out, func(x, y store.Object) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// validStatus reports a FieldError naming field unless status is a
// non-empty status name (as NewObject.Validate checks one).
func validStatus(field, status string) error {
	if status == "" {
		return &store.FieldError{Field: field, Expected: "a non-empty name of lower-case letters, digits and _"}
	}
	if _, err := (store.NewObject{Kind: "object", Status: status}).Validate(""); err != nil {
		var fe *store.FieldError
		if errors.As(err, &fe) {
			return &store.FieldError{Field: field, Expected: fe.Expected}
		}
		return err
	}
	return nil
}

// ClaimObject implements store.Knowledge.
func (s *Store) ClaimObject(ctx context.Context, id int64, worker string, statuses []string) (store.Object, error) {
	if err := cmp.Or(store.ValidateText("worker", worker), store.ValidateTexts("statuses", statuses)); err != nil {
		return store.Object{}, err
	}
	switch {
	case strings.TrimSpace(worker) == "":
		return store.Object{}, &store.FieldError{Field: "worker", Expected: "a non-empty worker name"}
	case len(statuses) == 0:
		return store.Object{}, &store.FieldError{Field: "statuses", Expected: "the statuses the object may be claimed in (at least one)"}
	}
	var out store.Object
	err := s.write(ctx, "claim object", func(tx *wtx, now time.Time) error {
		cur, err := getObject(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur.ClaimedBy != "" {
			return fmt.Errorf("object %d is claimed by %q: %w", id, cur.ClaimedBy, store.ErrConflict)
		}
		if !slices.Contains(statuses, cur.Status) {
			return fmt.Errorf("object %d is %q, not one of %q: %w", id, cur.Status, statuses, store.ErrConflict)
		}
		rows, err := tx.QueryContext(ctx, `UPDATE cks_objects SET claimed_by = ?, claim_token = `+newToken+`,
	claimed_at = ?, updated_at = ? WHERE object_id = ? AND claimed_by = '' RETURNING `+objectColumns,
			worker, fmtTime(now), fmtTime(now), id)
		if err != nil {
			return fmt.Errorf("sqlite: claim object %d: %w", id, err)
		}
		objs, err := scanObjects(rows, fmt.Sprintf("claim object %d", id))
		if err != nil {
			return err
		}
		if len(objs) != 1 {
			return fmt.Errorf("object %d changed concurrently: %w", id, store.ErrConflict)
		}
		out = objs[0]
		return nil
	})
	if err != nil {
		return store.Object{}, err
	}
	return out, nil
}

// newToken is the SQL expression of a fresh random object claim token.
const newToken = `lower(hex(randomblob(16)))`

// claimObjectsSQL is ClaimObjects' update; the candidates come from
// idx_objects_claim (current_status, claimed_by, object_id) in claim order.
const claimObjectsSQL = `UPDATE cks_objects SET claimed_by = ?, claim_token = ` + newToken + `, claimed_at = ?, updated_at = ?
WHERE object_id IN (SELECT c.object_id FROM cks_objects c WHERE c.current_status = ? AND c.claimed_by = ''
	ORDER BY c.object_id LIMIT ?)
RETURNING ` + objectColumns

// TouchClaim implements store.Knowledge.
func (s *Store) TouchClaim(ctx context.Context, id int64, claimToken string) error {
	return s.write(ctx, "touch object claim", func(tx *wtx, now time.Time) error {
		if _, err := claimedObject(ctx, tx, id, claimToken); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE cks_objects SET claimed_at = ?, updated_at = ? WHERE object_id = ?`,
			fmtTime(now), fmtTime(now), id)
		if err != nil {
			return fmt.Errorf("sqlite: touch claim of object %d: %w", id, err)
		}
		return nil
	})
}

// ReleaseClaim implements store.Knowledge.
func (s *Store) ReleaseClaim(ctx context.Context, id int64, claimToken string) error {
	return s.write(ctx, "release object claim", func(tx *wtx, now time.Time) error {
		if _, err := claimedObject(ctx, tx, id, claimToken); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE cks_objects SET `+releaseObjectClaim+`, updated_at = ? WHERE object_id = ?`,
			fmtTime(now), id)
		if err != nil {
			return fmt.Errorf("sqlite: release claim of object %d: %w", id, err)
		}
		return publish(ctx, tx, store.TopicObjects)
	})
}

// TransitionObject implements store.Knowledge.
func (s *Store) TransitionObject(ctx context.Context, id int64, claimToken string, t store.ObjectTransition) (store.Object, []store.Object, error) {
	t, err := t.Validate()
	if err != nil {
		return store.Object{}, nil, err
	}
	var (
		out      store.Object
		attached []store.Object
	)
	err = s.write(ctx, "transition object", func(tx *wtx, now time.Time) error {
		cur, err := claimedObject(ctx, tx, id, claimToken)
		if err != nil {
			return err
		}
		if cur.Status != t.From {
			return fmt.Errorf("object %d is %q, not %q: %w", id, cur.Status, t.From, store.ErrConflict)
		}
		// Every object the input names must exist before anything is written.
		for i, at := range t.Attach {
			for j, l := range at.Links {
				if err := mustExist(ctx, tx, l.Dst, fmt.Sprintf("attach[%d].links[%d].dst", i, j)); err != nil {
					return err
				}
			}
		}
		if err := checkEdgeEnds(ctx, tx, t.Edges); err != nil {
			return err
		}
		for i, c := range t.SetStatus {
			field := fmt.Sprintf("set_status[%d].object_id", i)
			if err := mustExist(ctx, tx, c.ObjectID, field); err != nil {
				return err
			}
			if c.ObjectID == id {
				return &store.FieldError{Field: field,
					Expected: fmt.Sprintf("the id of another object (%d is the transitioned object: its status is to)", id)}
			}
		}
		attached = make([]store.Object, 0, len(t.Attach))
		for i, at := range t.Attach {
			o, err := insertAttachment(ctx, tx, now, id, at, fmt.Sprintf("attach[%d].", i), t.Agent)
			if err != nil {
				return err
			}
			attached = append(attached, o)
		}
		for _, e := range t.Edges {
			if _, err := insertEdge(ctx, tx, now, e); err != nil {
				return err
			}
		}
		content, hash := cur.Content, cur.ContentHash
		head := cur.HeadVersion
		if len(t.Content) > 0 {
			if content, hash, err = store.CanonicalContent(t.Content, "content"); err != nil {
				return err
			}
			// A version based on the latest one (a head, so this adds none).
			var parents []int64
			if cur.HeadVersion > 0 {
				parents = []int64{cur.HeadVersion}
			}
			v, err := addVersion(ctx, tx, now, id, parents, content, hash, t.Agent)
			if err != nil {
				return err
			}
			head = v.Version
		}
		round := cur.Round
		if t.NextRound {
			round++
		}
		rows, err := tx.QueryContext(ctx, `UPDATE cks_objects SET content = ?, content_hash = ?, head_version = ?,
	heads = `+countHeadsSQL+`, round = ?, current_status = ?, `+releaseObjectClaim+`, updated_at = ?
	WHERE object_id = ? RETURNING `+objectColumns,
			string(content), hash, head, round, t.To, fmtTime(now), id)
		if err != nil {
			return fmt.Errorf("sqlite: transition object %d: %w", id, err)
		}
		objs, err := scanObjects(rows, fmt.Sprintf("transition object %d", id))
		if err != nil {
			return err
		}
		if len(objs) != 1 {
			return fmt.Errorf("object %d changed concurrently: %w", id, store.ErrConflict)
		}
		out = objs[0]
		var reasoning *int64
		if t.Reasoning >= 0 {
			r := attached[t.Reasoning].ID
			reasoning = &r
		}
		if _, err := appendLog(ctx, tx, store.TransitionEntry{ObjectID: id, TS: now, Agent: t.Agent, Action: t.Action,
			TransitionedTo: t.To, ReasoningNodeID: reasoning, ContentHash: out.ContentHash, Round: out.Round}); err != nil {
			return err
		}
		for _, c := range t.SetStatus {
			var (
				hash  string
				round int
			)
			err := tx.QueryRowContext(ctx, `UPDATE cks_objects SET current_status = ?, updated_at = ? WHERE object_id = ?
RETURNING content_hash, round`, c.Status, fmtTime(now), c.ObjectID).Scan(&hash, &round)
			if err != nil {
				return fmt.Errorf("sqlite: set status of object %d: %w", c.ObjectID, err)
			}
			if _, err := appendLog(ctx, tx, store.TransitionEntry{ObjectID: c.ObjectID, TS: now, Agent: t.Agent,
				Action: c.Action, TransitionedTo: c.Status, ReasoningNodeID: reasoning, ContentHash: hash, Round: round}); err != nil {
				return err
			}
		}
		return publish(ctx, tx, store.TopicObjects)
	})
	if err != nil {
		return store.Object{}, nil, err
	}
	return out, attached, nil
}

// ReleaseStaleClaims implements store.Knowledge.
func (s *Store) ReleaseStaleClaims(ctx context.Context, olderThan time.Time) (int, error) {
	var n int
	err := s.write(ctx, "release stale object claims", func(tx *wtx, now time.Time) error {
		res, err := tx.ExecContext(ctx, releaseStaleSQL, fmtTime(now), fmtTime(olderThan))
		if err != nil {
			return fmt.Errorf("sqlite: release stale object claims: %w", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlite: release stale object claims: %w", err)
		}
		if n = int(k); n == 0 {
			return nil
		}
		return publish(ctx, tx, store.TopicObjects)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// releaseStaleSQL is ReleaseStaleClaims' update; only claimed objects have a
// claimed_at, so idx_objects_claimed_at (partial, claimed_at IS NOT NULL)
// holds exactly the candidates.
const releaseStaleSQL = `UPDATE cks_objects SET ` + releaseObjectClaim + `, updated_at = ?
WHERE claimed_at IS NOT NULL AND claimed_at <= ?`

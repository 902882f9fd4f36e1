package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Knowledge = (*Store)(nil)

// objectColumns is the column list every object query reads, in scanObject's
// order.
const objectColumns = `object_id, kind, title, content, content_hash, current_status,
	claimed_by, claim_token, claimed_at, round, head_version, heads > 1, created_by, created_at, updated_at`

// edgeColumns is the column list every edge query reads, in scanEdge's order.
const edgeColumns = `edge_id, src, dst, base_type, semantic_type, weight, created_at`

// logColumns is the column list every transition log query reads, in
// scanEntry's order.
const logColumns = `seq, object_id, ts, agent, action, transitioned_to, reasoning_node_id, content_hash, round`

// releaseClaim is the SET fragment that ends an object's claim: its token
// stops being current, so the claimer's next call fails with ErrLeaseLost.
const releaseClaim = `claimed_by = '', claim_token = '', claimed_at = NULL`

// newToken is the SQL expression of a fresh random object claim token.
const newToken = `replace(gen_random_uuid()::text, '-', '')`

func scanObject(row pgx.Row) (store.Object, error) {
	var (
		o         store.Object
		content   string
		claimedAt *time.Time
	)
	err := row.Scan(&o.ID, &o.Kind, &o.Title, &content, &o.ContentHash, &o.Status,
		&o.ClaimedBy, &o.ClaimToken, &claimedAt, &o.Round, &o.HeadVersion, &o.Forked, &o.CreatedBy, &o.CreatedAt, &o.UpdatedAt)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Object{}, err
		}
		return store.Object{}, fmt.Errorf("postgres: scan object: %w", err)
	}
	o.Content = []byte(content)
	if claimedAt != nil {
		o.ClaimedAt = store.Time(*claimedAt)
	}
	o.CreatedAt = store.Time(o.CreatedAt)
	o.UpdatedAt = store.Time(o.UpdatedAt)
	return o, nil
}

func scanEdge(row pgx.Row) (store.Edge, error) {
	var e store.Edge
	if err := row.Scan(&e.ID, &e.Src, &e.Dst, &e.BaseType, &e.SemanticType, &e.Weight, &e.CreatedAt); err != nil {
		return e, fmt.Errorf("postgres: scan edge: %w", err)
	}
	e.CreatedAt = store.Time(e.CreatedAt)
	return e, nil
}

func scanEntry(row pgx.Row) (store.TransitionEntry, error) {
	var e store.TransitionEntry
	err := row.Scan(&e.Seq, &e.ObjectID, &e.TS, &e.Agent, &e.Action, &e.TransitionedTo,
		&e.ReasoningNodeID, &e.ContentHash, &e.Round)
	if err != nil {
		return e, fmt.Errorf("postgres: scan transition: %w", err)
	}
	e.TS = store.Time(e.TS)
	return e, nil
}

// getObject reads one object without its log and edges; lock appends a row
// lock clause such as "FOR UPDATE" (empty for none).
func getObject(ctx context.Context, q querier, id int64, lock string) (store.Object, error) {
	o, err := scanObject(q.QueryRow(ctx, `SELECT `+objectColumns+` FROM cks_objects WHERE object_id = $1 `+lock, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return o, fmt.Errorf("object %d: %w", id, store.ErrNotFound)
	}
	return o, err
}

// claimedObject reads and locks object id and checks that token is its
// current claim token; otherwise ErrLeaseLost (or ErrNotFound).
func claimedObject(ctx context.Context, tx pgx.Tx, id int64, token string) (store.Object, error) {
	if err := store.ValidateText("claim_token", token); err != nil {
		return store.Object{}, err
	}
	o, err := getObject(ctx, tx, id, lockWait)
	if err != nil {
		return o, err
	}
	if token == "" || o.ClaimToken != token {
		return o, fmt.Errorf("object %d (now %q, claimed by %q): %w", id, o.Status, o.ClaimedBy, store.ErrLeaseLost)
	}
	return o, nil
}

// appendEntry appends e to the transition log (its Seq is assigned here).
func appendEntry(ctx context.Context, tx pgx.Tx, e store.TransitionEntry) error {
	_, err := tx.Exec(ctx, `INSERT INTO cks_transition_log (object_id, ts, agent, action, transitioned_to,
	reasoning_node_id, content_hash, round)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.ObjectID, e.TS, e.Agent, e.Action, e.TransitionedTo, e.ReasoningNodeID, e.ContentHash, e.Round)
	if err != nil {
		return fmt.Errorf("postgres: transition log of object %d: %w", e.ObjectID, err)
	}
	return nil
}

// insertObject stores n (validated: content canonical) with its first
// version (no parents, by n.CreatedBy, the only head) and, when it has a
// status, its "created" log entry by n.CreatedBy. It does not publish. The
// version id is drawn first so object and version are written by one
// statement, the object never without its head_version.
func insertObject(ctx context.Context, tx pgx.Tx, now time.Time, n store.NewObject) (store.Object, error) {
	content, hash, err := store.CanonicalContent(n.Content, "content")
	if err != nil {
		return store.Object{}, err
	}
	o, err := scanObject(tx.QueryRow(ctx, `WITH o AS (
	INSERT INTO cks_objects (kind, title, content, content_hash, current_status, created_by, created_at, updated_at,
		head_version, heads)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $7, nextval(pg_get_serial_sequence('cks_object_versions', 'version_id')), 1)
	RETURNING *),
v AS (
	INSERT INTO cks_object_versions (version_id, object_id, parents, content, content_hash, author, created_at, is_head)
	SELECT head_version, object_id, '{}', content, content_hash, created_by, created_at, true FROM o)
SELECT `+objectColumns+` FROM o`,
		n.Kind, n.Title, string(content), hash, n.Status, n.CreatedBy, now))
	if err != nil {
		return o, fmt.Errorf("postgres: create object: %w", err)
	}
	if n.Status == "" {
		return o, nil
	}
	return o, appendEntry(ctx, tx, store.TransitionEntry{ObjectID: o.ID, TS: now, Agent: n.CreatedBy,
		Action: "created", TransitionedTo: n.Status, ContentHash: o.ContentHash, Round: o.Round})
}

// objectRef is an object id given in the input, and the field naming it.
type objectRef struct {
	field string
	id    int64
}

// checkObjects returns a FieldError naming the first of refs whose object
// does not exist. (Objects are never deleted, so what it sees stays true;
// the foreign keys check it again.)
func checkObjects(ctx context.Context, tx pgx.Tx, refs []objectRef) error {
	if len(refs) == 0 {
		return nil
	}
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.id
	}
	rows, err := tx.Query(ctx, `SELECT object_id FROM cks_objects WHERE object_id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("postgres: check objects: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("postgres: check objects: %w", err)
	}
	for _, r := range refs {
		if !slices.Contains(found, r.id) {
			return &store.FieldError{Field: r.field, Expected: fmt.Sprintf("the id of an existing object (no object %d)", r.id)}
		}
	}
	return nil
}

// edgeRefs returns the object references of edges, fields named edges[i].src
// and edges[i].dst.
func edgeRefs(edges []store.NewEdge) []objectRef {
	refs := make([]objectRef, 0, 2*len(edges))
	for i, e := range edges {
		refs = append(refs, objectRef{fmt.Sprintf("edges[%d].src", i), e.Src},
			objectRef{fmt.Sprintf("edges[%d].dst", i), e.Dst})
	}
	return refs
}

// insertEdge writes one edge (its objects checked to exist).
func insertEdge(ctx context.Context, tx pgx.Tx, now time.Time, e store.NewEdge) (store.Edge, error) {
	out, err := scanEdge(tx.QueryRow(ctx, `INSERT INTO cks_edges (src, dst, base_type, semantic_type, weight, created_at)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+edgeColumns, e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight, now))
	if err != nil {
		return out, fmt.Errorf("postgres: edge %d → %d: %w", e.Src, e.Dst, err)
	}
	return out, nil
}

// insertAttachment creates the object of a (validated) with an edge from it
// to object id and its links, the object created by agent unless it names
// its creator. The objects it names must have been checked to exist.
func insertAttachment(ctx context.Context, tx pgx.Tx, now time.Time, id int64, a store.Attachment, agent string) (store.Object, error) {
	n := a.Object
	if n.CreatedBy == "" {
		n.CreatedBy = agent
	}
	o, err := insertObject(ctx, tx, now, n)
	if err != nil {
		return o, err
	}
	if _, err := insertEdge(ctx, tx, now, store.NewEdge{Src: o.ID, Dst: id,
		BaseType: a.BaseType, SemanticType: a.SemanticType, Weight: a.Weight}); err != nil {
		return o, err
	}
	for _, l := range a.Links {
		if _, err := insertEdge(ctx, tx, now, store.NewEdge{Src: o.ID, Dst: l.Dst,
			BaseType: l.BaseType, SemanticType: l.SemanticType, Weight: l.Weight}); err != nil {
			return o, err
		}
	}
	return o, nil
}

// CreateObject implements store.Knowledge.
func (s *Store) CreateObject(ctx context.Context, n store.NewObject) (store.Object, error) {
	n, err := n.Validate("")
	if err != nil {
		return store.Object{}, err
	}
	var out store.Object
	err = s.write(ctx, "create object", func(tx pgx.Tx, now time.Time) error {
		o, err := insertObject(ctx, tx, now, n)
		if err != nil {
			return err
		}
		out = o
		if n.Status == "" {
			return nil
		}
		return publish(ctx, tx, store.TopicObjects)
	})
	return out, err
}

// GetObject implements store.Knowledge. It reads the object, its log and its
// edges in one REPEATABLE READ snapshot.
func (s *Store) GetObject(ctx context.Context, id int64) (store.Object, error) {
	var o store.Object
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return o, fmt.Errorf("postgres: get object %d: %w", id, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only; nothing to keep
	o, err = getObject(ctx, tx, id, "")
	if err != nil {
		return o, err
	}
	o.ClaimToken = "" // only the claim's answer carries it
	rows, err := tx.Query(ctx, `SELECT `+logColumns+` FROM cks_transition_log WHERE object_id = $1 ORDER BY seq`, id)
	if err != nil {
		return o, fmt.Errorf("postgres: transition log of object %d: %w", id, err)
	}
	o.Log, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TransitionEntry, error) { return scanEntry(r) })
	if err != nil {
		return o, fmt.Errorf("postgres: transition log of object %d: %w", id, err)
	}
	rows, err = tx.Query(ctx, `SELECT `+edgeColumns+` FROM cks_edges WHERE src = $1 OR dst = $1 ORDER BY edge_id`, id)
	if err != nil {
		return o, fmt.Errorf("postgres: edges of object %d: %w", id, err)
	}
	o.Edges, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Edge, error) { return scanEdge(r) })
	if err != nil {
		return o, fmt.Errorf("postgres: edges of object %d: %w", id, err)
	}
	if len(o.Log) == 0 {
		o.Log = nil
	}
	if len(o.Edges) == 0 {
		o.Edges = nil
	}
	return o, nil
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
		q += ` AND kind = ANY(` + a.add(f.Kinds) + `)`
	}
	if len(f.Statuses) > 0 {
		q += ` AND current_status = ANY(` + a.add(f.Statuses) + `)`
	}
	if f.Unclaimed {
		// With one status, idx_objects_claim serves it in cursor order.
		q += ` AND claimed_by = ''`
	}
	q += ` ORDER BY object_id LIMIT ` + a.add(f.Limit+1)
	rows, err := s.pool.Query(ctx, q, a.vals...)
	if err != nil {
		return store.ObjectPage{}, fmt.Errorf("postgres: list objects: %w", err)
	}
	var page store.ObjectPage
	page.Objects, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Object, error) { return scanObject(r) })
	if err != nil {
		return store.ObjectPage{}, fmt.Errorf("postgres: list objects: %w", err)
	}
	if page.Objects == nil {
		page.Objects = []store.Object{} // "objects": [] in JSON
	}
	for i := range page.Objects {
		page.Objects[i].ClaimToken = "" // only the claim's answer carries it
	}
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
		return []store.Edge{}, nil
	}
	var out []store.Edge
	err := s.write(ctx, "add edges", func(tx pgx.Tx, now time.Time) error {
		out = nil
		if err := checkObjects(ctx, tx, edgeRefs(edges)); err != nil {
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

// validObjectClaim checks ClaimObjects' arguments (as store/sqlite does).
func validObjectClaim(status, worker string, n int) error {
	if err := cmp.Or(store.ValidateText("status", status), store.ValidateText("worker", worker)); err != nil {
		return err
	}
	switch {
	case status == "":
		return &store.FieldError{Field: "status", Expected: "the status to claim objects of"}
	case strings.TrimSpace(worker) == "":
		return &store.FieldError{Field: "worker", Expected: "a non-empty worker name"}
	case n < 1 || n > store.MaxListLimit:
		return &store.FieldError{Field: "n", Expected: fmt.Sprintf("an integer from 1 to %d", store.MaxListLimit)}
	}
	return nil
}

// ClaimObjects implements store.Knowledge. The candidates are locked with
// SKIP LOCKED, so concurrent claimers never wait for each other and never
// claim one object; each claimed object gets its own random token.
func (s *Store) ClaimObjects(ctx context.Context, status, worker string, n int) ([]store.Object, error) {
	if err := validObjectClaim(status, worker, n); err != nil {
		return nil, err
	}
	var out []store.Object
	err := s.write(ctx, "claim objects", func(tx pgx.Tx, now time.Time) error {
		rows, err := tx.Query(ctx, `UPDATE cks_objects
SET claimed_by = $1, claim_token = `+newToken+`, claimed_at = $2, updated_at = $2
WHERE object_id IN (SELECT object_id FROM cks_objects
	WHERE current_status = $3 AND claimed_by = '' ORDER BY object_id LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING `+objectColumns, worker, now, status, n)
		if err != nil {
			return fmt.Errorf("postgres: claim objects: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Object, error) { return scanObject(r) })
		if err != nil {
			return fmt.Errorf("postgres: claim objects: %w", err)
		}
		return nil // a claim makes nothing claimable: no publish
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order; a claim picks the oldest first.
	slices.SortFunc(out, func(x, y store.Object) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// ClaimObject implements store.Knowledge. It waits for a transaction that
// holds the object (it names one object, there is nothing to skip to) and
// then decides on what that transaction left.
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
	err := s.write(ctx, "claim object", func(tx pgx.Tx, now time.Time) error {
		cur, err := getObject(ctx, tx, id, lockWait)
		if err != nil {
			return err
		}
		switch {
		case cur.ClaimedBy != "":
			return fmt.Errorf("object %d is claimed by %q: %w", id, cur.ClaimedBy, store.ErrConflict)
		case !slices.Contains(statuses, cur.Status):
			return fmt.Errorf("object %d is %q, not one of %q: %w", id, cur.Status, statuses, store.ErrConflict)
		}
		out, err = scanObject(tx.QueryRow(ctx, `UPDATE cks_objects
SET claimed_by = $1, claim_token = `+newToken+`, claimed_at = $2, updated_at = $2
WHERE object_id = $3 RETURNING `+objectColumns, worker, now, id))
		if err != nil {
			return fmt.Errorf("postgres: claim object %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return store.Object{}, err
	}
	return out, nil
}

// TouchClaim implements store.Knowledge. It publishes nothing: the claim's
// holder does not change.
func (s *Store) TouchClaim(ctx context.Context, id int64, claimToken string) error {
	return s.write(ctx, "touch claim", func(tx pgx.Tx, now time.Time) error {
		if _, err := claimedObject(ctx, tx, id, claimToken); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE cks_objects SET claimed_at = $1, updated_at = $1 WHERE object_id = $2`, now, id); err != nil {
			return fmt.Errorf("postgres: touch claim of object %d: %w", id, err)
		}
		return nil
	})
}

// ReleaseClaim implements store.Knowledge. It publishes TopicObjects: the
// object is claimable again.
func (s *Store) ReleaseClaim(ctx context.Context, id int64, claimToken string) error {
	return s.write(ctx, "release claim", func(tx pgx.Tx, now time.Time) error {
		if _, err := claimedObject(ctx, tx, id, claimToken); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE cks_objects SET `+releaseClaim+`, updated_at = $1 WHERE object_id = $2`, now, id); err != nil {
			return fmt.Errorf("postgres: release claim of object %d: %w", id, err)
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
	err = s.write(ctx, "transition", func(tx pgx.Tx, now time.Time) error {
		attached = nil
		cur, err := claimedObject(ctx, tx, id, claimToken)
		if err != nil {
			return err
		}
		if cur.Status != t.From {
			return fmt.Errorf("object %d is %q, not %q: %w", id, cur.Status, t.From, store.ErrConflict)
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
				return &store.FieldError{Field: field,
					Expected: fmt.Sprintf("the id of another object (%d is the transitioned object: its status is to)", id)}
			}
			refs = append(refs, objectRef{field, c.ObjectID})
		}
		if err := checkObjects(ctx, tx, refs); err != nil {
			return err
		}

		for _, a := range t.Attach {
			o, err := insertAttachment(ctx, tx, now, id, a, t.Agent)
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

		a := &args{}
		q := `UPDATE cks_objects SET current_status = ` + a.add(t.To) + `, updated_at = ` + a.add(now) + `, ` + releaseClaim
		if len(t.Content) > 0 {
			// A new version based on the latest one (always a head), by the
			// step; the claim's lock on the row orders it with version writes.
			content, hash, err := store.CanonicalContent(t.Content, "content")
			if err != nil {
				return err
			}
			v, added, err := insertVersion(ctx, tx, now, id, cur.HeadVersion, content, hash, t.Agent)
			if err != nil {
				return err
			}
			q += `, content = ` + a.add(string(content)) + `, content_hash = ` + a.add(hash) +
				`, head_version = ` + a.add(v.Version) + `, heads = heads + ` + a.add(added)
		}
		if t.NextRound {
			q += `, round = round + 1`
		}
		q += ` WHERE object_id = ` + a.add(id) + ` RETURNING ` + objectColumns
		if out, err = scanObject(tx.QueryRow(ctx, q, a.vals...)); err != nil {
			return fmt.Errorf("postgres: transition object %d: %w", id, err)
		}
		var reasoning *int64
		if t.Reasoning >= 0 {
			reasoning = &attached[t.Reasoning].ID
		}
		if err := appendEntry(ctx, tx, store.TransitionEntry{ObjectID: id, TS: now, Agent: t.Agent, Action: t.Action,
			TransitionedTo: t.To, ReasoningNodeID: reasoning, ContentHash: out.ContentHash, Round: out.Round}); err != nil {
			return err
		}

		for _, c := range t.SetStatus {
			o, err := scanObject(tx.QueryRow(ctx, `UPDATE cks_objects SET current_status = $1, updated_at = $2
WHERE object_id = $3 RETURNING `+objectColumns, c.Status, now, c.ObjectID))
			if err != nil {
				return fmt.Errorf("postgres: set status of object %d: %w", c.ObjectID, err)
			}
			// The change points to the transition's reasoning node too: it is
			// why the step changed it (ADR-007 §4).
			if err := appendEntry(ctx, tx, store.TransitionEntry{ObjectID: o.ID, TS: now, Agent: t.Agent, Action: c.Action,
				TransitionedTo: c.Status, ReasoningNodeID: reasoning, ContentHash: o.ContentHash, Round: o.Round}); err != nil {
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

// ReleaseStaleClaims implements store.Knowledge. Claims locked by a
// concurrent touch, release or transition are skipped (SKIP LOCKED): that
// writer is on them.
func (s *Store) ReleaseStaleClaims(ctx context.Context, olderThan time.Time) (int, error) {
	olderThan = store.Time(olderThan)
	var n int64
	err := s.write(ctx, "release stale claims", func(tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `UPDATE cks_objects SET `+releaseClaim+`, updated_at = $1
WHERE object_id IN (SELECT object_id FROM cks_objects
	WHERE claimed_by <> '' AND claimed_at <= $2 FOR UPDATE SKIP LOCKED)`, now, olderThan)
		if err != nil {
			return fmt.Errorf("postgres: release stale claims: %w", err)
		}
		if n = tag.RowsAffected(); n == 0 {
			return nil
		}
		return publish(ctx, tx, store.TopicObjects)
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

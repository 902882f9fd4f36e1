package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/store"
)

var _ store.Versions = (*Store)(nil)

// This first backend numbers versions by their row id (version_id), one
// sequence across all objects, where store.Version asks for numbers within
// each object: it is kept only until knowledge.Service over the drivers
// replaces it (issue 13), and the conformance suite's per-object test is
// skipped for it.

// versionColumns is the column list every version query reads, in scanVersion's order.
const versionColumns = `version_id, object_id, parents, content, content_hash, author, created_at`

func scanVersion(sc scanner) (store.Version, error) {
	var (
		v                         store.Version
		parents, content, created string
	)
	if err := sc.Scan(&v.Version, &v.ObjectID, &parents, &content, &v.ContentHash, &v.Author, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return v, err
		}
		return v, fmt.Errorf("sqlite: scan version: %w", err)
	}
	v.Parents = []int64{}
	if err := json.Unmarshal([]byte(parents), &v.Parents); err != nil {
		return v, fmt.Errorf("sqlite: version %d: bad parents %q: %w", v.Version, parents, err)
	}
	v.Content = json.RawMessage(content)
	var err error
	if v.CreatedAt, err = parseTime(created); err != nil {
		return v, err
	}
	return v, nil
}

// scanVersions reads every row of rows (versionColumns) and closes rows.
func scanVersions(rows *sql.Rows, what string) ([]store.Version, error) {
	return collect(rows, what, scanVersion)
}

// insertVersion stores a head version of object id with parents (sorted
// here) and canonical content with its hash. It does not touch the parents
// or the object row: see addVersion.
func insertVersion(ctx context.Context, tx *wtx, now time.Time, id int64, parents []int64, content json.RawMessage,
	hash, author string,
) (store.Version, error) {
	parents = slices.Sorted(slices.Values(parents))
	if parents == nil {
		parents = []int64{}
	}
	enc, err := json.Marshal(parents)
	if err != nil {
		return store.Version{}, fmt.Errorf("sqlite: version of object %d: %w", id, err)
	}
	v := store.Version{ObjectID: id, Parents: parents, Content: content, ContentHash: hash, Author: author, CreatedAt: now}
	err = tx.QueryRowContext(ctx, `INSERT INTO cks_object_versions (object_id, parents, content, content_hash, author,
	created_at, is_head) VALUES (?, ?, ?, ?, ?, ?, 1) RETURNING version_id`,
		id, string(enc), string(content), hash, author, fmtTime(now)).Scan(&v.Version)
	if err != nil {
		return v, fmt.Errorf("sqlite: version of object %d: %w", id, err)
	}
	return v, nil
}

// addVersion stores a head version of object id based on parents (versions
// of it, checked by the caller) and ends the headship of those parents that
// were heads. The caller then writes the version to the object row, with
// heads = countHeadsSQL.
func addVersion(ctx context.Context, tx *wtx, now time.Time, id int64, parents []int64, content json.RawMessage,
	hash, author string,
) (store.Version, error) {
	if len(parents) > 0 {
		a := &args{}
		q := `UPDATE cks_object_versions SET is_head = 0 WHERE object_id = ` + a.add(id) + ` AND is_head = 1
	AND version_id IN (` + placeholders(a, parents) + `)`
		if _, err := tx.ExecContext(ctx, q, a.vals...); err != nil {
			return store.Version{}, fmt.Errorf("sqlite: heads of object %d: %w", id, err)
		}
	}
	return insertVersion(ctx, tx, now, id, parents, content, hash, author)
}

// countHeadsSQL is the number of heads of the object a cks_objects UPDATE
// changes, counted on idx_object_versions_head: the heads column is kept
// equal to it by every version write.
const countHeadsSQL = `(SELECT count(*) FROM cks_object_versions h WHERE h.object_id = cks_objects.object_id AND h.is_head = 1)`

// placeholders adds ids to a and returns their comma-separated placeholders.
func placeholders(a *args, ids []int64) string {
	ph := make([]string, len(ids))
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	return strings.Join(ph, ", ")
}

// setHead makes v (just written by addVersion) the object's latest version:
// its content and hash, and the heads counted anew.
func setHead(ctx context.Context, tx *wtx, now time.Time, v store.Version) error {
	_, err := tx.ExecContext(ctx, `UPDATE cks_objects SET content = ?, content_hash = ?, head_version = ?,
	heads = `+countHeadsSQL+`, updated_at = ? WHERE object_id = ?`,
		string(v.Content), v.ContentHash, v.Version, fmtTime(now), v.ObjectID)
	if err != nil {
		return fmt.Errorf("sqlite: head of object %d: %w", v.ObjectID, err)
	}
	return nil
}

// headIDs returns the head version ids of object id, ascending.
func headIDs(ctx context.Context, q querier, id int64) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT version_id FROM cks_object_versions WHERE object_id = ? AND is_head = 1
ORDER BY version_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: heads of object %d: %w", id, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlite: heads of object %d: %w", id, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: heads of object %d: %w", id, err)
	}
	return out, nil
}

// validAuthor reports a FieldError naming author when it is blank.
func validAuthor(author string) error {
	if err := store.ValidateText("author", author); err != nil {
		return err
	}
	if strings.TrimSpace(author) == "" {
		return &store.FieldError{Field: "author", Expected: "the non-empty name of the version's writer"}
	}
	return nil
}

// WriteVersion implements store.Versions.
func (s *Store) WriteVersion(ctx context.Context, id, base int64, content json.RawMessage, author string) (store.Version, error) {
	content, hash, err := store.CanonicalContent(content, "content")
	if err != nil {
		return store.Version{}, err
	}
	if err := validAuthor(author); err != nil {
		return store.Version{}, err
	}
	if base <= 0 {
		return store.Version{}, &store.FieldError{Field: "base_version",
			Expected: fmt.Sprintf("the id of a version of object %d", id)}
	}
	var out store.Version
	err = s.write(ctx, "write version", func(tx *wtx, now time.Time) error {
		if ok, err := objectExists(ctx, tx, id); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("object %d: %w", id, store.ErrNotFound)
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM cks_object_versions WHERE version_id = ? AND object_id = ?`,
			base, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.FieldError{Field: "base_version",
				Expected: fmt.Sprintf("the id of a version of object %d (%d is not one)", id, base)}
		}
		if err != nil {
			return fmt.Errorf("sqlite: version %d of object %d: %w", base, id, err)
		}
		v, err := addVersion(ctx, tx, now, id, []int64{base}, content, hash, author)
		if err != nil {
			return err
		}
		out = v
		return setHead(ctx, tx, now, v)
	})
	if err != nil {
		return store.Version{}, err
	}
	return out, nil
}

// Heads implements store.Versions.
func (s *Store) Heads(ctx context.Context, id int64) ([]store.Version, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+versionColumns+` FROM cks_object_versions
WHERE object_id = ? AND is_head = 1 ORDER BY version_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: heads of object %d: %w", id, err)
	}
	return s.versionsOf(ctx, rows, id, "heads")
}

// ObjectVersions implements store.Versions.
func (s *Store) ObjectVersions(ctx context.Context, id int64) ([]store.Version, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+versionColumns+` FROM cks_object_versions
WHERE object_id = ? ORDER BY version_id`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: versions of object %d: %w", id, err)
	}
	return s.versionsOf(ctx, rows, id, "versions")
}

// versionsOf scans the versions of object id; none means there is no such
// object (every object has at least one version and one head).
func (s *Store) versionsOf(ctx context.Context, rows *sql.Rows, id int64, what string) ([]store.Version, error) {
	out, err := scanVersions(rows, fmt.Sprintf("%s of object %d", what, id))
	if err != nil || len(out) > 0 {
		return out, err
	}
	ok, err := objectExists(ctx, s.reader, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("object %d: %w", id, store.ErrNotFound)
	}
	return []store.Version{}, nil
}

// validReason validates a merge's reason attachment like a transition's,
// naming its fields reason.….
func validReason(a store.Attachment) (store.Attachment, error) {
	t, err := store.ObjectTransition{From: "merge", To: "merge", Action: "merge", Agent: "merge",
		Attach: []store.Attachment{a}, Reasoning: -1}.Validate()
	if err != nil {
		var fe *store.FieldError
		if errors.As(err, &fe) {
			return a, &store.FieldError{Field: "reason." + strings.TrimPrefix(fe.Field, "attach[0]."), Expected: fe.Expected}
		}
		return a, err
	}
	return t.Attach[0], nil
}

// MergeVersions implements store.Versions.
func (s *Store) MergeVersions(ctx context.Context, id int64, heads []int64, content json.RawMessage, author string,
	reason *store.Attachment,
) (store.Version, *store.Object, error) {
	content, hash, err := store.CanonicalContent(content, "content")
	if err != nil {
		return store.Version{}, nil, err
	}
	if err := validAuthor(author); err != nil {
		return store.Version{}, nil, err
	}
	if len(heads) == 0 {
		return store.Version{}, nil, &store.FieldError{Field: "heads",
			Expected: fmt.Sprintf("the head version ids of object %d (at least one)", id)}
	}
	merged := slices.Compact(slices.Sorted(slices.Values(heads)))
	var at store.Attachment
	if reason != nil {
		if at, err = validReason(*reason); err != nil {
			return store.Version{}, nil, err
		}
	}
	var (
		out store.Version
		obj *store.Object
	)
	err = s.write(ctx, "merge versions", func(tx *wtx, now time.Time) error {
		obj = nil
		if ok, err := objectExists(ctx, tx, id); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("object %d: %w", id, store.ErrNotFound)
		}
		cur, err := headIDs(ctx, tx, id)
		if err != nil {
			return err
		}
		if !slices.Equal(cur, merged) {
			return fmt.Errorf("object %d: merge of heads %v, but its heads are %v: %w", id, merged, cur, store.ErrConflict)
		}
		if reason != nil {
			for j, l := range at.Links {
				if err := mustExist(ctx, tx, l.Dst, fmt.Sprintf("reason.links[%d].dst", j)); err != nil {
					return err
				}
			}
		}
		v, err := addVersion(ctx, tx, now, id, merged, content, hash, author)
		if err != nil {
			return err
		}
		out = v
		if err := setHead(ctx, tx, now, v); err != nil {
			return err
		}
		if reason == nil {
			return nil
		}
		o, err := insertAttachment(ctx, tx, now, id, at, "reason.", author)
		if err != nil {
			return err
		}
		obj = &o
		if o.Status != "" { // the reason is claimable
			return publish(ctx, tx, store.TopicObjects)
		}
		return nil
	})
	if err != nil {
		return store.Version{}, nil, err
	}
	return out, obj, nil
}

// forkedObjectsSQL is ForkedObjects' query: the page of forked objects
// comes from idx_objects_forked (partial, heads > 1: only the forked ones)
// and the heads of each from idx_object_versions_head (partial, is_head = 1).
// INDEXED BY pins the first: once ANALYZE has run, the planner may prefer a
// rowid range scan of every object after the cursor when forks are common
// in its sample, which is the full table scan on a large store.
const forkedObjectsSQL = `SELECT o.object_id, v.version_id
FROM (SELECT object_id FROM cks_objects INDEXED BY idx_objects_forked WHERE heads > 1 AND object_id > ?
	ORDER BY object_id LIMIT ?) o
JOIN cks_object_versions v ON v.object_id = o.object_id AND v.is_head = 1
ORDER BY o.object_id, v.version_id`

// validPage reports a FieldError naming limit unless it is 1..MaxListLimit.
func validPage(limit int) error {
	if limit < 1 || limit > store.MaxListLimit {
		return &store.FieldError{Field: "limit", Expected: fmt.Sprintf("an integer from 1 to %d", store.MaxListLimit)}
	}
	return nil
}

// ForkedObjects implements store.Versions.
func (s *Store) ForkedObjects(ctx context.Context, after int64, limit int) ([]store.Fork, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, forkedObjectsSQL, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: forked objects: %w", err)
	}
	defer rows.Close()
	out := []store.Fork{}
	for rows.Next() {
		var obj, head int64
		if err := rows.Scan(&obj, &head); err != nil {
			return nil, fmt.Errorf("sqlite: forked objects: %w", err)
		}
		if n := len(out); n > 0 && out[n-1].ObjectID == obj {
			out[n-1].Heads = append(out[n-1].Heads, head)
			continue
		}
		out = append(out, store.Fork{ObjectID: obj, Heads: []int64{head}})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: forked objects: %w", err)
	}
	return out, nil
}

// ListEdges implements store.Versions.
func (s *Store) ListEdges(ctx context.Context, after int64, limit int) ([]store.Edge, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+edgeColumns+` FROM cks_edges WHERE edge_id > ?
ORDER BY edge_id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list edges: %w", err)
	}
	out, err := scanEdges(rows, "list edges")
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []store.Edge{}
	}
	return out, nil
}

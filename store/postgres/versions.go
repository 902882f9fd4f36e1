package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Versions = (*Store)(nil)

// This first backend numbers versions by their row id (version_id), one
// sequence across all objects, where store.Version asks for numbers within
// each object: it is kept only until knowledge.Service over the drivers
// replaces it (issue 13), and the conformance suite's per-object test is
// skipped for it.

// versionColumns is the column list every version query reads, in
// scanVersion's order.
const versionColumns = `version_id, object_id, parents, content, content_hash, author, created_at`

// lockVersions is the row lock every version write takes on its object
// before it reads the heads: writers of one object (WriteVersion,
// MergeVersions, TransitionObject's FOR UPDATE) wait for each other, so
// each sees the heads the one before it left. NO KEY UPDATE rather than
// UPDATE: an edge being written to the object (its foreign key takes KEY
// SHARE) need not wait for a version write, nor deadlock with one.
const lockVersions = "FOR NO KEY UPDATE"

func scanVersion(row pgx.Row) (store.Version, error) {
	var (
		v       store.Version
		content string
	)
	if err := row.Scan(&v.Version, &v.ObjectID, &v.Parents, &content, &v.ContentHash, &v.Author, &v.CreatedAt); err != nil {
		return v, fmt.Errorf("postgres: scan version: %w", err)
	}
	v.Content = []byte(content)
	if v.Parents == nil {
		v.Parents = []int64{} // "parents": [] in JSON
	}
	v.CreatedAt = store.Time(v.CreatedAt)
	return v, nil
}

// lockObject locks object id for a version write (ErrNotFound when there is
// no such object).
func lockObject(ctx context.Context, tx pgx.Tx, id int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM cks_objects WHERE object_id = $1 `+lockVersions, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("object %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: lock object %d: %w", id, err)
	}
	return nil
}

// insertVersion records content (canonical, with its hash) as a version of
// object id (locked by the caller) based on version base, by author. When
// base is a head it stops being one; when it is not, the new version is an
// additional head, and added is 1 (the caller adds it to the object's
// heads and sets head_version). A base that is not a version of the object
// is a FieldError naming base_version.
func insertVersion(ctx context.Context, tx pgx.Tx, now time.Time, id, base int64, content json.RawMessage, hash, author string) (v store.Version, added int, err error) {
	tag, err := tx.Exec(ctx, `UPDATE cks_object_versions SET is_head = false
WHERE version_id = $1 AND object_id = $2 AND is_head`, base, id)
	if err != nil {
		return v, 0, fmt.Errorf("postgres: version %d of object %d: %w", base, id, err)
	}
	if tag.RowsAffected() == 0 {
		var known bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cks_object_versions
WHERE version_id = $1 AND object_id = $2)`, base, id).Scan(&known); err != nil {
			return v, 0, fmt.Errorf("postgres: version %d of object %d: %w", base, id, err)
		}
		if !known {
			return v, 0, &store.FieldError{Field: "base_version",
				Expected: fmt.Sprintf("a version of object %d (%d is not one)", id, base)}
		}
		added = 1 // a stale base: the new version is another head, a fork
	}
	v, err = scanVersion(tx.QueryRow(ctx, `INSERT INTO cks_object_versions
	(object_id, parents, content, content_hash, author, created_at, is_head)
VALUES ($1, $2, $3, $4, $5, $6, true) RETURNING `+versionColumns,
		id, []int64{base}, string(content), hash, author, now))
	if err != nil {
		return v, 0, fmt.Errorf("postgres: version of object %d: %w", id, err)
	}
	return v, added, nil
}

// updateHead makes version v the object's latest written version (its
// content and hash the object's) and sets its heads to the SQL expression
// heads ("heads", "heads + 1", "1").
func updateHead(ctx context.Context, tx pgx.Tx, now time.Time, id int64, v store.Version, headsSQL string) error {
	_, err := tx.Exec(ctx, `UPDATE cks_objects SET content = $1, content_hash = $2, head_version = $3,
	heads = `+headsSQL+`, updated_at = $4 WHERE object_id = $5`,
		string(v.Content), v.ContentHash, v.Version, now, id)
	if err != nil {
		return fmt.Errorf("postgres: head of object %d: %w", id, err)
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
	err = s.write(ctx, "write version", func(tx pgx.Tx, now time.Time) error {
		if err := lockObject(ctx, tx, id); err != nil {
			return err
		}
		v, added, err := insertVersion(ctx, tx, now, id, base, content, hash, author)
		if err != nil {
			return err
		}
		heads := "heads"
		if added > 0 {
			heads = "heads + 1"
		}
		if err := updateHead(ctx, tx, now, id, v, heads); err != nil {
			return err
		}
		out = v
		return nil
	})
	if err != nil {
		return store.Version{}, err
	}
	return out, nil
}

// MergeVersions implements store.Versions.
func (s *Store) MergeVersions(ctx context.Context, id int64, heads []int64, content json.RawMessage, author string, reason *store.Attachment) (store.Version, *store.Object, error) {
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
	// A set: any order, a repeated id counts once. An id that is not a
	// head (unknown, 0, another object's) makes it differ: ErrConflict.
	want := slices.Compact(slices.Sorted(slices.Values(heads)))
	var why store.Attachment
	if reason != nil {
		if why, err = validReason(*reason); err != nil {
			return store.Version{}, nil, err
		}
	}
	var (
		out    store.Version
		outWhy *store.Object
	)
	err = s.write(ctx, "merge versions", func(tx pgx.Tx, now time.Time) error {
		outWhy = nil
		if err := lockObject(ctx, tx, id); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version_id FROM cks_object_versions
WHERE object_id = $1 AND is_head ORDER BY version_id`, id)
		if err != nil {
			return fmt.Errorf("postgres: heads of object %d: %w", id, err)
		}
		cur, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("postgres: heads of object %d: %w", id, err)
		}
		if !slices.Equal(cur, want) {
			return fmt.Errorf("object %d: merge of heads %v, but its heads are %v: %w", id, want, cur, store.ErrConflict)
		}
		if reason != nil {
			refs := make([]objectRef, len(why.Links))
			for j, l := range why.Links {
				refs[j] = objectRef{fmt.Sprintf("reason.links[%d].dst", j), l.Dst}
			}
			if err := checkObjects(ctx, tx, refs); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE cks_object_versions SET is_head = false WHERE version_id = ANY($1)`, cur); err != nil {
			return fmt.Errorf("postgres: heads of object %d: %w", id, err)
		}
		v, err := scanVersion(tx.QueryRow(ctx, `INSERT INTO cks_object_versions
	(object_id, parents, content, content_hash, author, created_at, is_head)
VALUES ($1, $2, $3, $4, $5, $6, true) RETURNING `+versionColumns,
			id, cur, string(content), hash, author, now))
		if err != nil {
			return fmt.Errorf("postgres: merge version of object %d: %w", id, err)
		}
		if err := updateHead(ctx, tx, now, id, v, "1"); err != nil {
			return err
		}
		out = v
		if reason != nil {
			o, err := insertAttachment(ctx, tx, now, id, why, author)
			if err != nil {
				return err
			}
			outWhy = &o
		}
		return nil
	})
	if err != nil {
		return store.Version{}, nil, err
	}
	return out, outWhy, nil
}

// validReason validates a merge's reason attachment the way
// ObjectTransition.Validate validates an attachment (content canonical),
// its fields named reason.….
func validReason(r store.Attachment) (store.Attachment, error) {
	t, err := store.ObjectTransition{From: "merge", To: "merge", Action: "merge", Agent: "merge",
		Attach: []store.Attachment{r}, Reasoning: 0}.Validate()
	if fe := (*store.FieldError)(nil); errors.As(err, &fe) {
		return r, &store.FieldError{Field: "reason." + strings.TrimPrefix(fe.Field, "attach[0]."), Expected: fe.Expected}
	}
	if err != nil {
		return r, err
	}
	return t.Attach[0], nil
}

// versions reads the versions of object id (only its heads when headsOnly),
// ascending; none means no such object, which is ErrNotFound: every object
// has a first version and at least one head.
func (s *Store) versions(ctx context.Context, id int64, headsOnly bool) ([]store.Version, error) {
	q := `SELECT ` + versionColumns + ` FROM cks_object_versions WHERE object_id = $1`
	if headsOnly {
		q += ` AND is_head`
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY version_id`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: versions of object %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Version, error) { return scanVersion(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: versions of object %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("object %d: %w", id, store.ErrNotFound)
	}
	return out, nil
}

// Heads implements store.Versions.
func (s *Store) Heads(ctx context.Context, id int64) ([]store.Version, error) {
	return s.versions(ctx, id, true)
}

// ObjectVersions implements store.Versions.
func (s *Store) ObjectVersions(ctx context.Context, id int64) ([]store.Version, error) {
	return s.versions(ctx, id, false)
}

// validPage reports a FieldError naming limit unless it is 1..MaxListLimit
// (as store/sqlite; a cursor below every id is the first page).
func validPage(limit int) error {
	if limit < 1 || limit > store.MaxListLimit {
		return &store.FieldError{Field: "limit", Expected: fmt.Sprintf("an integer from 1 to %d", store.MaxListLimit)}
	}
	return nil
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

// ForkedObjects implements store.Versions. The heads of each fork are read
// in the same statement as the fork, so they are the ones that made it.
func (s *Store) ForkedObjects(ctx context.Context, after int64, limit int) ([]store.Fork, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT o.object_id, ARRAY(SELECT v.version_id FROM cks_object_versions v
	WHERE v.object_id = o.object_id AND v.is_head ORDER BY v.version_id)
FROM cks_objects o WHERE o.heads > 1 AND o.object_id > $1 ORDER BY o.object_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: forked objects: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Fork, error) {
		var f store.Fork
		err := r.Scan(&f.ObjectID, &f.Heads)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: forked objects: %w", err)
	}
	return out, nil
}

// ListEdges implements store.Versions.
func (s *Store) ListEdges(ctx context.Context, after int64, limit int) ([]store.Edge, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+edgeColumns+` FROM cks_edges WHERE edge_id > $1 ORDER BY edge_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list edges: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Edge, error) { return scanEdge(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list edges: %w", err)
	}
	return out, nil
}

package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Versions are numbered 1, 2, 3 … within each object, in the order they are
// written, and never removed: the versions of an object are exactly the
// numbers 1 to its head_version (the latest written one), and a new one is
// head_version + 1. Every version write locks the object row first, so
// writers of one object (WriteVersion, MergeVersions, TransitionObject)
// follow each other and each sees the heads and the number the one before
// it left.

func versionView(v driver.VersionRow) cks.Version {
	parents := v.Parents
	if parents == nil {
		parents = []int64{} // "parents": [] in JSON
	}
	return cks.Version{Version: v.Version, ObjectID: v.ObjectID, Parents: parents, Content: v.Content,
		ContentHash: v.ContentHash, Author: v.Author, CreatedAt: v.CreatedAt}
}

// writeVersion records content (canonical, with its hash) as the next
// version of o (locked by the caller) based on version base, by author, and
// makes it o's latest: o's content, hash, head version and update time
// follow, and o's heads grow by one when base was no longer a head (a
// fork). The caller writes o. base must be a version of o.
func writeVersion(ctx context.Context, ex driver.Executor, now time.Time, o *driver.ObjectRow, base int64, content []byte, hash, author string) error {
	unset, err := ex.VersionUnsetHeads(ctx, driver.VersionUnsetHeadsParams{ObjectID: o.ID, Versions: []int64{base}})
	if err != nil {
		return err
	}
	if unset == 0 {
		o.Heads++ // a stale base: the new version is another head
	}
	return appendVersion(ctx, ex, now, o, []int64{base}, content, hash, author)
}

// appendVersion inserts the next version of o with parents, as a head, and
// makes it o's latest (o's heads are the caller's).
func appendVersion(ctx context.Context, ex driver.Executor, now time.Time, o *driver.ObjectRow, parents []int64, content []byte, hash, author string) error {
	v := driver.VersionRow{ObjectID: o.ID, Version: o.HeadVersion + 1, Parents: parents, Content: content,
		ContentHash: hash, Author: author, CreatedAt: now, IsHead: true}
	if _, err := ex.VersionInsertMany(ctx, []driver.VersionRow{v}); err != nil {
		return err
	}
	o.Content, o.ContentHash, o.HeadVersion, o.UpdatedAt = content, hash, v.Version, now
	return nil
}

// validAuthor reports a FieldError naming author when it is not text a
// backend stores (cks.ValidateText) or blank.
func validAuthor(author string) error {
	if err := cks.ValidateText("author", author); err != nil {
		return err
	}
	if strings.TrimSpace(author) == "" {
		return &cks.FieldError{Field: "author", Expected: "the non-empty name of the version's writer"}
	}
	return nil
}

// WriteVersion records content (a JSON object, canonicalised) as the
// next version of object id based on its version base, by author. When
// base is a head it stops being one; when it is not, the new version is
// an additional head (a fork). A base that is not a version of the
// object is a FieldError naming base_version, and nothing is written.
func (s *Service) WriteVersion(ctx context.Context, id, base int64, content json.RawMessage, author string) (cks.Version, error) {
	content, hash, err := CanonicalContent(content, "content")
	if err != nil {
		return cks.Version{}, err
	}
	if err := validAuthor(author); err != nil {
		return cks.Version{}, err
	}
	if base <= 0 {
		return cks.Version{}, &cks.FieldError{Field: "base_version",
			Expected: fmt.Sprintf("the number of a version of object %d", id)}
	}
	var out cks.Version
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		o, err := getForUpdate(ctx, ex, id)
		if err != nil {
			return err
		}
		if base > o.HeadVersion {
			return &cks.FieldError{Field: "base_version",
				Expected: fmt.Sprintf("a version of object %d (it has versions 1 to %d, not %d)", id, o.HeadVersion, base)}
		}
		if err := writeVersion(ctx, ex, now, &o, base, content, hash, author); err != nil {
			return err
		}
		if _, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{o}); err != nil {
			return err
		}
		out = cks.Version{Version: o.HeadVersion, ObjectID: id, Parents: []int64{base}, Content: content,
			ContentHash: hash, Author: author, CreatedAt: now}
		return nil
	})
	if err != nil {
		return cks.Version{}, err
	}
	return out, nil
}

// MergeVersions records content as the merge of heads, which must be
// exactly the object's current heads (in any order; ErrConflict naming
// them otherwise, e.g. when a writer or another merge came first). The
// merge version has all of them as parents and becomes the only head.
// reason, when set, is created with an edge reason → object of its
// types (a reasoning node linked with resolves), in the same
// transaction. It returns the merge version and the reason's object.
func (s *Service) MergeVersions(ctx context.Context, id int64, heads []int64, content json.RawMessage, author string, reason *Attachment) (cks.Version, *cks.Object, error) {
	content, hash, err := CanonicalContent(content, "content")
	if err != nil {
		return cks.Version{}, nil, err
	}
	if err := validAuthor(author); err != nil {
		return cks.Version{}, nil, err
	}
	if len(heads) == 0 {
		return cks.Version{}, nil, &cks.FieldError{Field: "heads",
			Expected: fmt.Sprintf("the head version numbers of object %d (at least one)", id)}
	}
	// A set: any order, a repeated number counts once. A number that is not
	// a head (unknown, 0, a former head) makes it differ: ErrConflict.
	want := slices.Compact(slices.Sorted(slices.Values(heads)))
	var why Attachment
	if reason != nil {
		if why, err = validReason(*reason); err != nil {
			return cks.Version{}, nil, err
		}
	}
	var (
		out    cks.Version
		outWhy *cks.Object
	)
	err = s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		outWhy = nil
		o, err := getForUpdate(ctx, ex, id)
		if err != nil {
			return err
		}
		hs, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: id, HeadsOnly: true})
		if err != nil {
			return err
		}
		cur := make([]int64, len(hs))
		for i, h := range hs {
			cur[i] = h.Version
		}
		if !slices.Equal(cur, want) {
			return fmt.Errorf("object %d: merge of heads %v, but its heads are %v: %w", id, want, cur, cks.ErrConflict)
		}
		if reason != nil {
			refs := make([]objectRef, len(why.Links))
			for j, l := range why.Links {
				refs[j] = objectRef{fmt.Sprintf("reason.links[%d].dst", j), l.Dst}
			}
			if err := checkObjects(ctx, ex, refs); err != nil {
				return err
			}
		}
		if _, err := ex.VersionUnsetHeads(ctx, driver.VersionUnsetHeadsParams{ObjectID: id, Versions: cur}); err != nil {
			return err
		}
		if err := appendVersion(ctx, ex, now, &o, cur, content, hash, author); err != nil {
			return err
		}
		o.Heads = 1
		if _, err := ex.ObjectUpdateMany(ctx, []driver.ObjectRow{o}); err != nil {
			return err
		}
		out = cks.Version{Version: o.HeadVersion, ObjectID: id, Parents: cur, Content: content,
			ContentHash: hash, Author: author, CreatedAt: now}
		if reason == nil {
			return nil
		}
		// The reason node, linked reason → object, created by the merger
		// unless it names its creator.
		attach := []Attachment{why}
		made, err := insertObjects(ctx, ex, now, attachmentObjects(attach, author))
		if err != nil {
			return err
		}
		if _, err := insertEdges(ctx, ex, attachmentEdges(attach, made, id, now)); err != nil {
			return err
		}
		outWhy = &made[0]
		if why.Object.Status == "" {
			return nil
		}
		return ex.Notify(ctx, cks.TopicObjects) // a reason with a status is claimable
	})
	if err != nil {
		return cks.Version{}, nil, err
	}
	return out, outWhy, nil
}

// validReason validates a merge's reason attachment the way
// ObjectTransition.Validate validates an attachment (content canonical),
// its fields named reason.….
func validReason(r Attachment) (Attachment, error) {
	t, err := ObjectTransition{From: "merge", To: "merge", Action: "merge", Agent: "merge",
		Attach: []Attachment{r}, Reasoning: 0}.Validate()
	if fe := (*cks.FieldError)(nil); errors.As(err, &fe) {
		return r, &cks.FieldError{Field: "reason." + strings.TrimPrefix(fe.Field, "attach[0]."), Expected: fe.Expected}
	}
	if err != nil {
		return r, err
	}
	return t.Attach[0], nil
}

// versions reads the versions of object id (only its heads when headsOnly),
// ascending; none means no such object, which is ErrNotFound: every object
// has a first version and at least one head.
func (s *Service) versions(ctx context.Context, id int64, headsOnly bool) ([]cks.Version, error) {
	rows, err := s.db.Executor().VersionList(ctx, driver.VersionListParams{ObjectID: id, HeadsOnly: headsOnly})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("object %d: %w", id, cks.ErrNotFound)
	}
	out := make([]cks.Version, len(rows))
	for i, r := range rows {
		out[i] = versionView(r)
	}
	return out, nil
}

// Heads returns the head versions of object id, ascending by number
// (ErrNotFound for an unknown object).
func (s *Service) Heads(ctx context.Context, id int64) ([]cks.Version, error) {
	return s.versions(ctx, id, true)
}

// ObjectVersions returns every version of object id, ascending by
// number.
func (s *Service) ObjectVersions(ctx context.Context, id int64) ([]cks.Version, error) {
	return s.versions(ctx, id, false)
}

// validPage reports a FieldError naming limit unless it is 1..MaxListLimit
// (a cursor below every id is the first page).
func validPage(limit int) error {
	if limit < 1 || limit > cks.MaxListLimit {
		return &cks.FieldError{Field: "limit", Expected: fmt.Sprintf("an integer from 1 to %d", cks.MaxListLimit)}
	}
	return nil
}

// ForkedObjects returns up to limit forks with object id > after,
// ascending (the fork_detection sweeper pages through them).
//
// The heads of each fork are read in the same statement as the fork, so they
// are the ones that made it.
func (s *Service) ForkedObjects(ctx context.Context, after int64, limit int) ([]cks.Fork, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.Executor().ForkList(ctx, driver.ForkListParams{After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]cks.Fork, len(rows))
	for i, r := range rows {
		out[i] = cks.Fork{ObjectID: r.ObjectID, Heads: r.Heads}
	}
	return out, nil
}

// ListEdges returns up to limit edges with edge_id > after, ascending
// (the graph_health sweeper pages through the graph).
func (s *Service) ListEdges(ctx context.Context, after int64, limit int) ([]cks.Edge, error) {
	if err := validPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.Executor().EdgeList(ctx, driver.EdgeListParams{After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]cks.Edge, len(rows))
	for i, r := range rows {
		out[i] = edgeView(r)
	}
	return out, nil
}

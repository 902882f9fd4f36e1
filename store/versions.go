package store

import (
	"context"
	"encoding/json"

	"github.com/cks-dev/cks"
)

// Versions is the version history of knowledge objects (issue 8). Every
// content write records a version: CreateObject the first one (no parents),
// TransitionObject with Content one based on the object's latest version,
// WriteVersion one based on the version the writer names. A write based on
// a version that is no longer a head does not overwrite: it adds a second
// head, and the object is forked until MergeVersions joins the heads. The
// object row always carries the latest written version's content and hash
// (Object.HeadVersion), and Object.Forked says whether there are other
// heads.
type Versions interface {
	// WriteVersion records content (a JSON object, canonicalised) as the
	// next version of object id based on its version base, by author. When
	// base is a head it stops being one; when it is not, the new version is
	// an additional head (a fork). A base that is not a version of the
	// object is a FieldError naming base_version, and nothing is written.
	WriteVersion(ctx context.Context, id, base int64, content json.RawMessage, author string) (cks.Version, error)
	// Heads returns the head versions of object id, ascending by number
	// (ErrNotFound for an unknown object).
	Heads(ctx context.Context, id int64) ([]cks.Version, error)
	// ObjectVersions returns every version of object id, ascending by
	// number.
	ObjectVersions(ctx context.Context, id int64) ([]cks.Version, error)
	// MergeVersions records content as the merge of heads, which must be
	// exactly the object's current heads (in any order; ErrConflict naming
	// them otherwise, e.g. when a writer or another merge came first). The
	// merge version has all of them as parents and becomes the only head.
	// reason, when set, is created with an edge reason → object of its
	// types (a reasoning node linked with resolves), in the same
	// transaction. It returns the merge version and the reason's object.
	MergeVersions(ctx context.Context, id int64, heads []int64, content json.RawMessage, author string, reason *Attachment) (cks.Version, *cks.Object, error)
	// ForkedObjects returns up to limit forks with object id > after,
	// ascending (the fork_detection sweeper pages through them).
	ForkedObjects(ctx context.Context, after int64, limit int) ([]cks.Fork, error)
	// ListEdges returns up to limit edges with edge_id > after, ascending
	// (the graph_health sweeper pages through the graph).
	ListEdges(ctx context.Context, after int64, limit int) ([]cks.Edge, error)
}

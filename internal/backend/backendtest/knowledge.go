package backendtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// MustCreateObject creates n or fails the test.
func MustCreateObject(t testing.TB, k *knowledge.Service, n knowledge.NewObject) cks.Object {
	t.Helper()
	o, err := k.CreateObject(Ctx(t), n)
	if err != nil {
		t.Fatalf("CreateObject(%+v): %v", n, err)
	}
	if o.ID <= 0 {
		t.Fatalf("CreateObject(%+v) returned id %d", n, o.ID)
	}
	return o
}

// MustGetObject returns object id with its log and edges or fails the test.
func MustGetObject(t testing.TB, k *knowledge.Service, id int64) cks.Object {
	t.Helper()
	o, err := k.GetObject(Ctx(t), id)
	if err != nil {
		t.Fatalf("GetObject(%d): %v", id, err)
	}
	return o
}

// AllObjects lists every object, following the cursor.
func AllObjects(t testing.TB, k *knowledge.Service) []cks.Object {
	t.Helper()
	var all []cks.Object
	for cursor := int64(0); ; {
		page, err := k.ListObjects(Ctx(t), cks.ObjectFilter{After: cursor, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatalf("ListObjects(after %d): %v", cursor, err)
		}
		all = append(all, page.Objects...)
		if page.Next == 0 {
			return all
		}
		if page.Next <= cursor {
			t.Fatalf("ListObjects cursor went from %d to %d", cursor, page.Next)
		}
		cursor = page.Next
	}
}

// AsJSON is the JSON of v, for comparing whole records.
func AsJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ObjectSnapshot returns every object with its log and edges, by id.
func ObjectSnapshot(t testing.TB, k *knowledge.Service) map[int64]string {
	t.Helper()
	m := map[int64]string{}
	for _, o := range AllObjects(t, k) {
		m[o.ID] = AsJSON(t, MustGetObject(t, k, o.ID))
	}
	return m
}

// VersionKey describes v (content canonical, no parents and empty parents
// alike, time in UTC) for comparing versions read by different calls.
func VersionKey(t testing.TB, v cks.Version) string {
	t.Helper()
	c, err := cks.CanonicalJSON(v.Content)
	if err != nil {
		t.Fatalf("version %d: content %s: %v", v.Version, v.Content, err)
	}
	return fmt.Sprintf("version=%d object=%d parents=%v hash=%s author=%q at=%s content=%s",
		v.Version, v.ObjectID, v.Parents, v.ContentHash, v.Author, v.CreatedAt.UTC().Format(time.RFC3339Nano), c)
}

// MustVersions returns the versions of object id or fails the test.
func MustVersions(t testing.TB, v *knowledge.Service, id int64) []cks.Version {
	t.Helper()
	vs, err := v.ObjectVersions(Ctx(t), id)
	if err != nil {
		t.Fatalf("ObjectVersions(%d): %v", id, err)
	}
	return vs
}

// MustForks returns up to limit forked objects after id after, or fails
// the test.
func MustForks(t testing.TB, v *knowledge.Service, after int64, limit int) []cks.Fork {
	t.Helper()
	fs, err := v.ForkedObjects(Ctx(t), after, limit)
	if err != nil {
		t.Fatalf("ForkedObjects(%d, %d): %v", after, limit, err)
	}
	return fs
}

// VersionSnapshot returns every object's versions, by object id.
func VersionSnapshot(t testing.TB, k *knowledge.Service, v *knowledge.Service) map[int64]string {
	t.Helper()
	m := map[int64]string{}
	for _, o := range AllObjects(t, k) {
		var keys []string
		for _, x := range MustVersions(t, v, o.ID) {
			keys = append(keys, VersionKey(t, x))
		}
		m[o.ID] = strings.Join(keys, "\n")
	}
	return m
}

package jsonlines_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/jsonlines"
)

// TestAppend: records land one JSON line each, after what the file held,
// in a file (and directory) created private; a record JSON cannot encode
// is an error naming it.
func TestAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "archive", "x.jsonl")
	type rec struct {
		N int `json:"n"`
	}
	if err := jsonlines.Append(path, []rec{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	if err := jsonlines.Append(path, []rec{{3}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"; got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if err := jsonlines.Append(path, []any{func() {}}); err == nil {
		t.Fatal("a func encoded")
	}
}

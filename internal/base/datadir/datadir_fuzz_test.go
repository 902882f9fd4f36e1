package datadir_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/base/datadir"
)

// FuzzReadToken reads arbitrary token and URL files: the value is the file's
// content without surrounding white space, an empty one is an error naming
// the file, and what WriteToken stored reads back.
func FuzzReadToken(f *testing.F) {
	for _, s := range []string{"cks_abc\n", "", "\n\n", "  tok  ", "a\nb", "\x00", "\xff\xfe", "tok\r\n", strings.Repeat("x", 1<<16)} {
		f.Add([]byte(s))
	}
	dir := datadir.Dir(f.TempDir())
	f.Fuzz(func(t *testing.T, content []byte) {
		want := strings.TrimSpace(string(content))
		for _, file := range []struct {
			path string
			read func() (string, error)
		}{{dir.TokenFile(), dir.ReadToken}, {dir.URLFile(), dir.ReadURL}} {
			if err := os.WriteFile(file.path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := file.read()
			switch {
			case want == "" && (err == nil || !strings.Contains(err.Error(), file.path)):
				t.Fatalf("%s holding %q: %q, %v; want an error naming the file", file.path, content, got, err)
			case want != "" && (err != nil || got != want):
				t.Fatalf("%s holding %q: %q, %v; want %q", file.path, content, got, err, want)
			}
		}
		if want == "" {
			return
		}
		if err := dir.WriteToken(want); err != nil {
			t.Fatal(err)
		}
		if got, err := dir.ReadToken(); err != nil || got != want {
			t.Fatalf("WriteToken(%q) reads back as %q, %v", want, got, err)
		}
	})
}

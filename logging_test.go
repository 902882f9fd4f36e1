package cks_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNilLoggerIsDefault (issue 40): one rule for a component's nil
// *slog.Logger — it logs to slog.Default(), never to nowhere — so a
// caller who forgot a logger still sees the component's errors. A
// product file that makes a discarding logger breaks it; tests and the
// benchmarks, which silence what they measure, may.
func TestNilLoggerIsDefault(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "slog.DiscardHandler") {
			t.Errorf("%s makes a discarding logger: a nil logger is slog.Default()", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package cks_test

import (
	"os"
	"strings"
	"testing"
)

// TestNilLoggerIsDefault (issue 40): one rule for a component's nil
// *slog.Logger — it logs to slog.Default(), never to nowhere — so a
// caller who forgot a logger still sees the component's errors. A
// product file that makes a discarding logger breaks it; tests and the
// benchmarks, which silence what they measure, may.
func TestNilLoggerIsDefault(t *testing.T) {
	err := walkFiles(func(path string) error {
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
	}, "bench")
	if err != nil {
		t.Fatal(err)
	}
}

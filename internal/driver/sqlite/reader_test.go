package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderIsQueryOnly: the reader pool cannot write, so a primitive that
// writes by mistake through it fails instead of bypassing the one writer.
func TestReaderIsQueryOnly(t *testing.T) {
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "cks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.q.ChangeBump(context.Background(), d.reader, "t")
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("write through the reader: err = %v, want a read-only refusal", err)
	}
}

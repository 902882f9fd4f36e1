package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(t testing.TB) store.Store {
		return open(t, filepath.Join(t.TempDir(), "cks.db"))
	})
}

func BenchmarkLedger(b *testing.B) {
	storetest.BenchLedger(b, func(t testing.TB) store.Store {
		return open(t, filepath.Join(t.TempDir(), "cks.db"))
	})
}

func BenchmarkKnowledge(b *testing.B) {
	storetest.BenchKnowledge(b, func(t testing.TB) store.Store {
		return open(t, filepath.Join(t.TempDir(), "cks.db"))
	})
}

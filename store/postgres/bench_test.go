package postgres_test

import (
	"testing"

	"github.com/cks-dev/cks/store"
	"github.com/cks-dev/cks/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(t testing.TB) store.Store {
		_, u := freshSchema(t)
		return open(t, u)
	})
}

func BenchmarkLedger(b *testing.B) {
	storetest.BenchLedger(b, func(t testing.TB) store.Store {
		_, u := freshSchema(t)
		return open(t, u)
	})
}

func BenchmarkKnowledge(b *testing.B) {
	storetest.BenchKnowledge(b, func(t testing.TB) store.Store {
		_, u := freshSchema(t)
		return open(t, u)
	})
}

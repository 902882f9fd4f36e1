package postgres_test

import (
	"slices"
	"testing"

	"github.com/cks-dev/cks/internal/driver/postgres"
)

// TestParseKeywords: libpq's keyword/value form — spaces around "=",
// quoted values with escapes, empty quoted values — and what is not one.
func TestParseKeywords(t *testing.T) {
	kv := func(p ...string) []postgres.Keyword {
		var out []postgres.Keyword
		for i := 0; i < len(p); i += 2 {
			out = append(out, postgres.Keyword{Key: p[i], Value: p[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		in   string
		want []postgres.Keyword
	}{
		{"host=db dbname=cks", kv("host", "db", "dbname", "cks")},
		{" host = db\tport=5432 ", kv("host", "db", "port", "5432")},
		{`password='a b\'c\\' user=''`, kv("password", `a b'c\`, "user", "")},
		{"a=b", kv("a", "b")},
	} {
		got, ok := postgres.ParseKeywords(c.in)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("ParseKeywords(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{"", "postgres://h/db", "cks.db", "=x", "host=a=b", "host='open", "host='a'b", "1host=x", "host"} {
		if got, ok := postgres.ParseKeywords(in); ok {
			t.Errorf("ParseKeywords(%q) = %q, want not a connection string", in, got)
		}
	}
	if postgres.IsConnString("a=b") || !postgres.IsConnString("dbname=cks") {
		t.Error("IsConnString: a=b names no libpq keyword, dbname=cks does")
	}
}

// FuzzParseKeywords: what ParseKeywords reads, JoinKeywords writes back
// as a string it reads the same.
func FuzzParseKeywords(f *testing.F) {
	for _, s := range []string{"host=db dbname=cks", `password='a b\'c\\' user=''`, "a = b", "host='x' y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, ok := postgres.ParseKeywords(s)
		if !ok {
			return
		}
		again, ok := postgres.ParseKeywords(postgres.JoinKeywords(kv))
		if !ok || !slices.Equal(again, kv) {
			t.Fatalf("%q read %q, written %q, read back %q %v", s, kv, postgres.JoinKeywords(kv), again, ok)
		}
	})
}

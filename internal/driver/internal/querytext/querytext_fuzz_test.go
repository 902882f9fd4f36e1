package querytext

import "testing"

// FuzzParse: no query file's text makes Parse panic, and each query it
// renders has a name.
func FuzzParse(f *testing.F) {
	f.Add("-- name: Q :one\nSELECT 1;\n")
	f.Add("-- fragment: f\nAND x = @x;\n-- name: Q :many\n-- variants: A B\nSELECT * FROM t WHERE true /*include f*/ /*if A*/1/*elif B*/2/*else*/3/*end*/ /*lock*/;\n")
	f.Add("-- name: Q :one\n-- variants: A\nSELECT /*if A*/x;\n")
	f.Fuzz(func(t *testing.T, text string) {
		qs, err := Parse("f.sql", text)
		if err != nil {
			return
		}
		for _, q := range qs {
			if q.Name == "" || q.Kind == "" {
				t.Fatalf("a query without a name or kind: %+v", q)
			}
		}
	})
}

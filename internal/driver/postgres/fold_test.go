package postgres_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// TestFoldIsSearchKey: the case folding the queries apply to stored text
// on Postgres, translate(lower(text COLLATE "und-x-icu"), chr(962),
// chr(963)), is cks.SearchKey — the Go rule SQLite's cks_fold calls and
// the searches' text goes through — for every character, so a search
// matches the same tasks and objects on both dialects.
func TestFoldIsSearchKey(t *testing.T) {
	url := drivertest.PostgresURL(t)
	open(t, url).Close()
	c := conn(t, url)
	ctx := testCtx(t)
	var chunk []rune
	check := func() {
		t.Helper()
		s := string(chunk)
		var got string
		if err := c.QueryRow(ctx, `SELECT translate(lower($1::text COLLATE "und-x-icu"), chr(962), chr(963))`, s).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := cks.SearchKey(s); got != want {
			// Find the characters that differ, one query each.
			bad := 0
			for _, r := range chunk {
				var one string
				if err := c.QueryRow(ctx, `SELECT translate(lower($1::text COLLATE "und-x-icu"), chr(962), chr(963))`, string(r)).Scan(&one); err != nil {
					t.Fatal(err)
				}
				if w := cks.SearchKey(string(r)); one != w {
					if bad++; bad <= 20 {
						t.Errorf("%U %q: Postgres folds it to %q, cks.SearchKey to %q", r, string(r), one, w)
					}
				}
			}
			if bad > 20 {
				t.Errorf("… and %d more characters", bad-20)
			}
		}
		chunk = chunk[:0]
	}
	for r := rune(1); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		chunk = append(chunk, r, ' ')
		if len(chunk) >= 20000 {
			check()
		}
	}
	check()
	for _, w := range [][2]string{{"ΣΊΣΥΦΟΣ", "σίσυφοσ"}, {"Ärger", "ärger"}, {"İ", "i\u0307"}, {"Straße", "straße"}} {
		if got := cks.SearchKey(w[0]); got != w[1] || !strings.Contains(cks.SearchKey(w[0]+" x"), w[1]) {
			t.Errorf("SearchKey(%q) = %q, want %q", w[0], got, w[1])
		}
	}
}

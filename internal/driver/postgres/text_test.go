package postgres_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver/drivertest"
)

// TestTextRuleMatchesPostgres: cks.ValidateText accepts exactly the
// strings a Postgres TEXT takes, and cks.ValidateJSON the valid JSON
// texts a jsonb takes but for the bounds of every stored value (nesting,
// size, a number's growth), so the rule the services apply on both
// dialects lets nothing through that Postgres would fail on and refuses
// nothing else it could store. A number's stored form (cks.StoredJSON) is
// the one jsonb prints, so SQLite answers the same digits.
func TestTextRuleMatchesPostgres(t *testing.T) {
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, drivertest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Each value is its own statement: a refused one aborts nothing else.
	accepts := func(typ, v string) (bool, error) {
		var n int
		err := conn.QueryRow(ctx, "SELECT length($1::text::"+typ+"::text)", v).Scan(&n)
		return err == nil, err
	}

	texts := []string{
		"", "plain", "tab\tnewline\n", "\x01\x1f\x7f", "é", "\u00e9\u0301", "\uffff", "\ufffd", "\U0001F600", "\U0010FFFF",
		"\x00", "a\x00b", "\xff", "\xc3", "a\xc3(", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xc0\x80",
		"\xe0\x80\x80", "\xf8\x88\x80\x80\x80", "\x80", "\u2028",
	}
	for _, s := range texts {
		pg, pgErr := accepts("text", s)
		ours := cks.ValidateText("f", s)
		if pg != (ours == nil) {
			t.Errorf("text %q: Postgres accepts: %v (%v); ValidateText: %v", s, pg, pgErr, ours)
		}
	}

	docs := []string{
		`{}`, `[]`, `"x"`, `null`, `true`, `{"a":"b"}`, `{"a":"\u0001"}`, `{"a":"\u001f\u007f"}`, `{"a":"\\u0000"}`,
		`{"a":"\\\u0041"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\uDBFF\uDFFF"}`, `{"a":"\uD800\uDC00"}`, `{"a":"\uffff"}`,
		`{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"x\u0000"}`, `["\u0000"]`, `{"a":"\ud800"}`, `{"a":"\udc00"}`,
		`{"a":"\ud800\u0041"}`, `{"a":"\ud800\\"}`, `{"a":"\udfff\ud800"}`, `{"a":"\ud800\ud800"}`, `["\ud800x"]`,
		"{\"a\":\"\xff\"}", "{\"\xc3\":1}", "[\"\xed\xa0\x80\"]", "\"\u00e9\"",
		`0`, `-0`, `1.5`, `-1.25e+3`, `1E5`, `0e0`, `[1e131071]`, `[1e131072]`, `[9.999e131071]`, `[0.1e131072]`,
		`[0.1e131073]`, `[0.001e131074]`, `[0.001e131075]`, `[1e-16383]`, `[1e-16384]`, `[1.5e-16383]`, `[10e-16384]`,
		`[0e-16384]`, `[0e-16383]`, `[0.0e-16383]`, `[1e1073741822]`, `[0e1073741822]`, `[0e1073741823]`, `[0e-1073741823]`,
		`[1e99999999999999999999]`, `[0e-99999999999999999999]`, `[-1e131071]`, `[-1e131072]`, `[123456.789e-16377]`,
		`[123456.789e-16378]`, `[1.` + strings.Repeat("0", 16383) + `]`, `[1.` + strings.Repeat("0", 16384) + `]`,
		`[1` + strings.Repeat("0", 131071) + `]`, `[1` + strings.Repeat("0", 131072) + `]`,
		`[0.` + strings.Repeat("0", 16382) + `1]`, `[` + strings.Repeat("0", 1) + `.` + strings.Repeat("0", 16384) + `]`,
	}
	// Numbers around the limits, at random but reproducibly.
	r := rand.New(rand.NewPCG(20, 26))
	for range 200 {
		mant := fmt.Sprint(r.IntN(100000))
		if r.IntN(2) == 0 {
			mant = fmt.Sprintf("%d.%0*d", r.IntN(1000), r.IntN(6), r.IntN(1000))
		}
		exp := 131066 + r.IntN(12)
		if r.IntN(2) == 0 {
			exp = -16389 + r.IntN(12)
		}
		docs = append(docs, fmt.Sprintf("[%se%d]", mant, exp))
	}
	for _, d := range docs {
		if !json.Valid([]byte(d)) {
			t.Fatalf("corpus document %.60q is not valid JSON", d)
		}
		pg, pgErr := accepts("jsonb", d)
		ours := cks.ValidateJSON("f", []byte(d))
		bound := ours != nil && strings.Contains(ours.Error(), cks.ExpectedJSONNumberGrowth)
		if pg != (ours == nil) && !(pg && bound) {
			t.Errorf("JSON %.80q: Postgres jsonb accepts: %v (%v); ValidateJSON: %v", d, pg, pgErr, ours)
		}
	}

	nums := []string{`0`, `-0`, `-0.0`, `-0e5`, `0e-3`, `1e2`, `1E+2`, `1.5e-3`, `1.50e1`, `-1.25e+3`, `10e-1`,
		`0.5e1`, `0.000001e5`, `0.00e1`, `123e-2`, `-5e-1`, `1e399`, `5e-324`, `1.7976931348623157e308`, `12.5`, `-7`}
	for range 300 {
		mant := fmt.Sprint(r.IntN(100000))
		if r.IntN(2) == 0 {
			mant = fmt.Sprintf("%d.%0*d", r.IntN(1000), r.IntN(6), r.IntN(1000))
		}
		if r.IntN(3) == 0 {
			mant = "-" + mant
		}
		nums = append(nums, fmt.Sprintf("%se%d", mant, r.IntN(80)-40))
	}
	for _, n := range nums {
		var pg string
		if err := conn.QueryRow(ctx, "SELECT $1::text::jsonb::text", n).Scan(&pg); err != nil {
			t.Fatalf("jsonb %s: %v", n, err)
		}
		if ours, err := cks.StoredJSON("f", []byte(n)); err != nil || string(ours) != pg {
			t.Errorf("StoredJSON(%s) = %s, %v; Postgres's jsonb prints %s", n, ours, err, pg)
		}
	}
	deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	if pg, _ := accepts("jsonb", deep); !pg {
		t.Errorf("jsonb refuses 9,000 levels: the depth bound is no longer cks's alone")
	}
	if err := cks.ValidateJSON("payload", []byte(deep)); !cks.IsFieldError(err, "payload") {
		t.Errorf("ValidateJSON(9,000 levels) = %v, want a FieldError naming payload", err)
	}
}

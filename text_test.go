package cks_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cks-dev/cks"
)

func TestValidateText(t *testing.T) {
	for _, c := range []struct {
		in, wantIn string // wantIn: "" when accepted, else a part of the message
	}{
		{"", ""}, {"plain", ""}, {"é\u2028\U0001F600\uFFFD", ""}, {"\x01\x7f", ""},
		{"\x00", "a NUL byte at byte 0"},
		{"ab\x00", "a NUL byte at byte 2"},
		{"é\xff", "invalid UTF-8 at byte 2"},
		{"caf\xc3", "invalid UTF-8 at byte 3"},
		{"\xed\xa0\x80", "invalid UTF-8 at byte 0"},     // an encoded surrogate
		{"\xc0\x80", "invalid UTF-8 at byte 0"},         // an overlong NUL
		{"\xf4\x90\x80\x80", "invalid UTF-8 at byte 0"}, // beyond U+10FFFF
	} {
		err := cks.ValidateText("title", c.in)
		switch {
		case c.wantIn == "" && err != nil:
			t.Errorf("ValidateText(%q) = %v, want nil", c.in, err)
		case c.wantIn != "" && (!cks.IsFieldError(err, "title") || !strings.Contains(err.Error(), c.wantIn) ||
			!strings.HasPrefix(err.Error(), "invalid title: expected "+cks.ExpectedText)):
			t.Errorf("ValidateText(%q) = %v, want a FieldError naming title and saying %q", c.in, err, c.wantIn)
		}
		if got := cks.ToText(c.in); cks.ValidateText("t", got) != nil || (c.wantIn == "" && got != c.in) {
			t.Errorf("ToText(%q) = %q", c.in, got)
		}
	}
	if err := cks.ValidateTexts("types", []string{"a", "b\x00"}); !cks.IsFieldError(err, "types") ||
		!strings.Contains(err.Error(), "of element 1") {
		t.Errorf("ValidateTexts = %v", err)
	}
}

func TestValidateJSON(t *testing.T) {
	for _, c := range []struct {
		in, wantIn string
	}{
		{`{"a":"b","c":[1,-2.5e3,true,null]}`, ""},
		{`{"a":"\\u0000"}`, ""}, // an escaped backslash, then text
		{`{"a":"\ud83d\ude00\u0001"}`, ""},
		{`[1e300, 1e-300, 0.1e301]`, ""},
		{`[1e131071]`, "plain decimal form"},
		{`[1e-16383]`, "plain decimal form"},
		{`{"a":"\u0000"}`, `a \u0000 escape at byte 6`},
		{`{"\u0000":1}`, `a \u0000 escape at byte 2`},
		{`{"a":"\\\u0000"}`, `a \u0000 escape at byte 8`},
		{`["\ud800"]`, "an unpaired surrogate escape at byte 2"},
		{`["\ud800\u0041"]`, "an unpaired surrogate escape at byte 2"},
		{`["x\udc00"]`, "an unpaired surrogate escape at byte 3"},
		{"[\"\xff\"]", "invalid UTF-8 at byte 2"},
		{`[1e131072]`, "numeric"},
		{`[1e-16384]`, "numeric"},
		{`[0e1073741823]`, "numeric"},
		{`[1.` + strings.Repeat("5", 16384) + `]`, "numeric"},
		{strings.Repeat("[", cks.MaxJSONDepth) + strings.Repeat("]", cks.MaxJSONDepth), ""},
		{`{"a":` + strings.Repeat("[", cks.MaxJSONDepth) + strings.Repeat("]", cks.MaxJSONDepth) + `}`, "level 65 at byte 68"},
		{`{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`, "nested at most 64 levels"},
		{`["[[[[", "{{{{"]`, ""}, // brackets in strings do not nest
		{`[1e399, 1.5e-300, 5e-324, 1.7976931348623157e308]`, ""},
		{`[1e400]`, "1e400 at byte 1 is 401 characters"},
		{`[1` + strings.Repeat("0", 500) + `]`, ""}, // written out: it does not grow
		{`"` + strings.Repeat("x", cks.MaxJSONBytes-2) + `"`, ""},
		{`"` + strings.Repeat("x", cks.MaxJSONBytes-1) + `"`, "at most 262144 bytes (262145 bytes as stored)"},
		{`["` + strings.Repeat("x", cks.MaxJSONBytes-12) + `",1e10]`, "(262148 bytes as stored)"}, // 1e10 stores 11 digits
	} {
		err := cks.ValidateJSON("payload", []byte(c.in))
		switch {
		case c.wantIn == "" && err != nil:
			t.Errorf("ValidateJSON(%.40q) = %v, want nil", c.in, err)
		case c.wantIn != "" && (!cks.IsFieldError(err, "payload") || !strings.Contains(err.Error(), c.wantIn)):
			t.Errorf("ValidateJSON(%.40q) = %v, want a FieldError naming payload and saying %q", c.in, err, c.wantIn)
		}
	}
}

// TestStoredJSON: numbers written with an exponent, and negative zeros, are
// stored in the plain form a Postgres numeric prints (internal/driver/postgres's
// TestTextRuleMatchesPostgres holds it to Postgres itself); the rest of the
// text is kept byte for byte.
func TestStoredJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a": [1, -2.5, "1e5"]}`, `{"a": [1, -2.5, "1e5"]}`},
		{`1e2`, `100`}, {`1E+2`, `100`}, {`1.5e-3`, `0.0015`}, {`1.50e1`, `15.0`}, {`-1.25e+3`, `-1250`},
		{`10e-1`, `1.0`}, {`0.5e1`, `5`}, {`0.000001e5`, `0.1`}, {`0e5`, `0`}, {`0.00e1`, `0.0`}, {`0e-2`, `0.00`},
		{`-0`, `0`}, {`-0.0`, `0.0`}, {`-0e3`, `0`}, {`-0.0e-1`, `0.00`}, {`123e-2`, `1.23`}, {`-5e-1`, `-0.5`},
		{`[1e3,{"k":-0,"e":2E1}]`, `[1000,{"k":0,"e":20}]`},
	} {
		got, err := cks.StoredJSON("payload", []byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("StoredJSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
		if err := cks.ValidateJSON("payload", []byte(c.in)); err != nil {
			t.Errorf("ValidateJSON(%s) = %v", c.in, err)
		}
	}
}

// FuzzValidateJSON: the scanner never panics, and JSON it accepts decodes
// to strings and keys without a NUL, in UTF-8, and stays accepted in its
// canonical form.
func FuzzValidateJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":"\u0000"}`, `["\ud800\udc00"]`, `["\ud800"]`, `[1e131072]`,
		`{"a":"\\u0000"}`, "[\"\xff\"]", `[-0.5e-16383]`, `"\u00e9"`, `{"a":[{"b":"\"\\\/\b\f\n\r\t"}]}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), `[1e400, -0, 1.5E-3, 0.00e1]`, `["[[", {"{": 1e2}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := cks.ValidateJSON("f", b)
		if err != nil || !json.Valid(b) {
			return
		}
		var walk func(v any)
		walk = func(v any) {
			check := func(s string) {
				if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
					t.Fatalf("accepted %q holds the string %q", b, s)
				}
			}
			switch v := v.(type) {
			case string:
				check(v)
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					check(k)
					walk(e)
				}
			}
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		walk(v)
		st, err := cks.StoredJSON("f", b)
		if err != nil || !json.Valid(st) || len(st) > cks.MaxJSONBytes {
			t.Fatalf("accepted %q, stored form %q (%v)", b, st, err)
		}
		if again, err := cks.StoredJSON("f", st); err != nil || !bytes.Equal(again, st) {
			t.Fatalf("stored form %q of %q is not stored as it is: %q, %v", st, b, again, err)
		}
		if c, err := cks.CanonicalJSON(b); err == nil {
			if err := cks.ValidateJSON("f", c); err != nil {
				t.Fatalf("accepted %q, refused its canonical form %q: %v", b, c, err)
			}
		}
	})
}

// TestTextLimits: a field takes the limit of its name (the last segment of
// a path), and TextFor cuts text to it at a rune boundary, noting the cut,
// so what a worker records is never refused for its length.
func TestTextLimits(t *testing.T) {
	for _, c := range []struct {
		field string
		want  int
	}{
		{"title", cks.MaxTitleLen}, {"add_children[0].title", cks.MaxTitleLen}, {"description", cks.MaxLongTextLen},
		{"attach[2].object.title", cks.MaxTitleLen}, {"reason", cks.MaxLongTextLen}, {"type", cks.MaxShortTextLen},
		{"grants[0].resource", cks.MaxShortTextLen},
	} {
		if got := cks.MaxTextLen(c.field); got != c.want {
			t.Errorf("MaxTextLen(%q) = %d, want %d", c.field, got, c.want)
		}
	}
	if err := cks.ValidateText("title", strings.Repeat("x", cks.MaxTitleLen)); err != nil {
		t.Errorf("a title at the bound: %v", err)
	}
	if err := cks.ValidateText("title", strings.Repeat("x", cks.MaxTitleLen+1)); !cks.IsFieldError(err, "title") {
		t.Errorf("a title past the bound: %v, want a FieldError naming title", err)
	}
	long := strings.Repeat("é", cks.MaxLongTextLen) + "\x00"
	got := cks.TextFor("result", long)
	if len(got) > cks.MaxLongTextLen || cks.ValidateText("result", got) != nil || !strings.HasSuffix(got, "more bytes cut]") {
		t.Errorf("TextFor cut %d bytes to %d (%v), ending %q", len(long), len(got), cks.ValidateText("result", got), got[len(got)-30:])
	}
	if got := cks.TextFor("result", "ok\x00"); got != "ok\uFFFD" {
		t.Errorf("TextFor(short) = %q", got)
	}
}

package cks

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What text and JSON the store accepts, on every backend. Postgres refuses
// a NUL byte and invalid UTF-8 in TEXT, and a \u0000 escape, an unpaired
// surrogate escape or a number beyond numeric's range in jsonb, where
// SQLite would store them all. The rule is checked here, in Go, before
// anything is written, so both backends answer the same FieldError (an
// HTTP 400 naming the field) instead of SQLite storing what Postgres
// fails on with a 500.

// ExpectedText is what a FieldError of ValidateText says was expected.
const ExpectedText = "text without NUL bytes, in UTF-8"

// ExpectedJSONText is what a FieldError of ValidateJSON says was expected
// of the text of a JSON value.
const ExpectedJSONText = `JSON in UTF-8 without \u0000 or unpaired surrogate (\ud800-\udfff) escapes`

// Limits of a Postgres numeric, which jsonb stores every JSON number as:
// at most 131072 digits before the decimal point (a weight of 32767
// base-10000 digits) and 16383 after it, and an exponent the parser takes.
const (
	maxNumericIntDigits  = 131072
	maxNumericFracDigits = 16383
	maxNumericExponent   = 1<<30 - 1 // INT_MAX/2
)

// ExpectedJSONNumber is what a FieldError of ValidateJSON says was
// expected of a number.
var ExpectedJSONNumber = fmt.Sprintf("JSON numbers a Postgres numeric holds (at most %d digits before the decimal point and %d after it)",
	maxNumericIntDigits, maxNumericFracDigits)

// Lengths of text fields, in bytes, on every surface. A field takes the
// limit of its name as the API spells it (the last segment of a path such
// as add_children[0].title); the OpenAPI document states each as the
// property's maxLength.
const (
	// MaxTitleLen bounds a title.
	MaxTitleLen = 1000
	// MaxLongTextLen bounds the prose fields of longTextFields.
	MaxLongTextLen = 64 << 10
	// MaxShortTextLen bounds every other text: ids, types, names, keys,
	// actors, tokens.
	MaxShortTextLen = 4 << 10
)

// longTextFields are the fields that hold prose: what a task asks for,
// what an attempt answered, why someone acted.
var longTextFields = map[string]bool{
	"description": true, "acceptance_criteria": true, "result": true, "reason": true, "question": true,
	"answer": true, "note": true, "review_note": true, "text": true, "body": true, "last_error": true,
}

// MaxTextLen is the most bytes a text field named field may hold.
func MaxTextLen(field string) int {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	switch {
	case field == "title":
		return MaxTitleLen
	case longTextFields[field]:
		return MaxLongTextLen
	}
	return MaxShortTextLen
}

// ValidateText reports a FieldError naming field unless s is text every
// backend stores as it is — valid UTF-8 (which excludes encoded
// surrogates) without a NUL byte; the error says where the first offending
// byte is — and at most MaxTextLen(field) bytes long.
func ValidateText(field, s string) error {
	if n := MaxTextLen(field); len(s) > n {
		return fieldError(field, fmt.Sprintf("at most %d bytes of text (got %d)", n, len(s)))
	}
	if off, what := badText(s); off >= 0 {
		return fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedText, what, off))
	}
	return nil
}

// ValidateTexts is ValidateText of every element of ss, naming field
// (the list, as the API spells it) and the index of the first bad one.
func ValidateTexts(field string, ss []string) error {
	n := MaxTextLen(field)
	for i, s := range ss {
		if len(s) > n {
			return fieldError(field, fmt.Sprintf("at most %d bytes of text in each element (element %d has %d)", n, i, len(s)))
		}
		if off, what := badText(s); off >= 0 {
			return fieldError(field, fmt.Sprintf("%s (%s at byte %d of element %d)", ExpectedText, what, off, i))
		}
	}
	return nil
}

// badText returns the offset of the first NUL byte or invalid UTF-8 in s
// and which it is, or -1.
func badText(s string) (int, string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return i, "a NUL byte"
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i, "invalid UTF-8"
		}
		i += n
	}
	return -1, ""
}

// Bounds of every stored JSON value (a task's payload and metadata, an
// object's content), decided here once for every surface. Go's decoder
// takes 10,000 levels of nesting, and an indented rendering of a value that
// deep costs a level of indentation per line: an 18 KB payload became a
// 162 MB answer. Postgres stores every number in its plain decimal form, so
// a number written with an exponent grows there (1e400 is 401 digits): the
// size bound counts the stored form, and one number may grow only so far.
const (
	// MaxJSONDepth bounds the nesting of arrays and objects in a value.
	MaxJSONDepth = 64
	// MaxJSONBytes bounds a value's stored form: its text with every
	// number in plain decimal form (StoredJSON).
	MaxJSONBytes = 256 << 10
	// MaxJSONNumberGrowth bounds the plain decimal form of a number
	// written with an exponent: at most this many characters, or its
	// written length when that is longer. Every float64 fits (5e-324 is
	// 326 characters written out).
	MaxJSONNumberGrowth = 400
)

// ValidateJSON reports a FieldError naming field unless b, a JSON text
// (json.Valid; callers check that first, with their own message), is one
// every backend stores alike and within the bounds above: UTF-8 without
// NUL bytes, no \u0000 escape and no unpaired surrogate escape in any
// string or key (Go's decoder would turn the latter into U+FFFD, Postgres
// refuses both), every number within what a Postgres numeric holds and
// growing at most to MaxJSONNumberGrowth characters in plain form, nested
// at most MaxJSONDepth levels, and at most MaxJSONBytes long as stored.
func ValidateJSON(field string, b []byte) error {
	_, err := scanJSON(field, b, false)
	return err
}

// StoredJSON is ValidateJSON that also returns b as every backend stores
// it: each number written with an exponent, and each negative zero, in the
// plain decimal form a Postgres numeric prints (1.5e-3 is 0.0015, 1.50e1 is
// 15.0, -0 is 0), so SQLite stores and answers the digits Postgres does.
// b itself is returned when it has no such number.
func StoredJSON(field string, b []byte) ([]byte, error) {
	return scanJSON(field, b, true)
}

// scanJSON is ValidateJSON, and StoredJSON when rewrite is set.
func scanJSON(field string, b []byte, rewrite bool) ([]byte, error) {
	if off, what := badText(string(b)); off >= 0 {
		return nil, fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONText, what, off))
	}
	var (
		out   []byte // the stored form so far, once a number was rewritten
		from  int    // b[from:] is not in out yet
		size  = len(b)
		depth int
	)
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			end, off, what := scanString(b, i)
			if off >= 0 {
				return nil, fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONText, what, off))
			}
			i = end
		case c == '[' || c == '{':
			if depth++; depth > MaxJSONDepth {
				return nil, fieldError(field, fmt.Sprintf("%s (level %d at byte %d)", ExpectedJSONDepth, depth, i))
			}
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			end, ok := scanNumber(b, i)
			if !ok {
				return nil, fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONNumber, b[i:end], i))
			}
			if plain, changed := plainNumber(b[i:end]); changed {
				if len(plain) > max(end-i, MaxJSONNumberGrowth) {
					return nil, fieldError(field, fmt.Sprintf("%s (%.40s at byte %d is %d characters in plain form)",
						ExpectedJSONNumberGrowth, b[i:end], i, len(plain)))
				}
				size += len(plain) - (end - i)
				if rewrite {
					out = append(append(out, b[from:i]...), plain...)
					from = end
				}
			}
			i = end
		default:
			i++
		}
	}
	if size > MaxJSONBytes {
		return nil, fieldError(field, fmt.Sprintf("%s (%d bytes as stored)", ExpectedJSONSize, size))
	}
	if out == nil {
		return b, nil
	}
	return append(out, b[from:]...), nil
}

// What a FieldError of ValidateJSON says was expected of a value's
// nesting, of a number's growth and of a value's size.
var (
	ExpectedJSONDepth        = fmt.Sprintf("JSON nested at most %d levels deep", MaxJSONDepth)
	ExpectedJSONNumberGrowth = fmt.Sprintf("JSON numbers at most %d characters long in plain decimal form", MaxJSONNumberGrowth)
	ExpectedJSONSize         = fmt.Sprintf("a JSON value of at most %d bytes", MaxJSONBytes)
)

// plainNumber returns the plain decimal form of the JSON number n, as a
// Postgres numeric prints it, and whether that differs from n: only a
// number with an exponent or a negative zero does. The digits are those
// written, the point moved by the exponent; the scale (digits after the
// point) is those written after it less the exponent, at least 0.
func plainNumber(n []byte) ([]byte, bool) {
	neg := n[0] == '-'
	s := n
	if neg {
		s = s[1:]
	}
	mant, exp, hasExp := s, int64(0), false
	if k := bytes.IndexAny(s, "eE"); k >= 0 {
		mant, hasExp = s[:k], true
		exp, _ = strconv.ParseInt(strings.TrimPrefix(string(s[k+1:]), "+"), 10, 64) // scanNumber bounded it
	}
	intPart, frac, _ := bytes.Cut(mant, []byte("."))
	zero := bytes.Count(intPart, []byte("0"))+bytes.Count(frac, []byte("0")) == len(intPart)+len(frac)
	if !hasExp && !(neg && zero) {
		return n, false
	}
	if !hasExp {
		return s, true // a negative zero: the same digits without the sign
	}
	digits := append(append([]byte{}, intPart...), frac...)
	point := int64(len(intPart)) + exp // where the point goes in digits
	scale := max(int64(len(frac))-exp, 0)
	var out []byte
	if neg && !zero {
		out = append(out, '-')
	}
	switch {
	case point <= 0:
		out = append(out, '0')
	case point >= int64(len(digits)):
		whole := bytes.TrimLeft(digits, "0")
		if len(whole) == 0 {
			out = append(out, '0')
		} else {
			out = append(out, whole...)
			out = append(out, bytes.Repeat([]byte("0"), int(point-int64(len(digits))))...)
		}
	default:
		whole := bytes.TrimLeft(digits[:point], "0")
		if len(whole) == 0 {
			whole = []byte("0")
		}
		out = append(out, whole...)
	}
	if scale > 0 {
		out = append(out, '.')
		if point < 0 {
			out = append(out, bytes.Repeat([]byte("0"), int(-point))...)
			out = append(out, digits...)
		} else {
			out = append(out, digits[point:]...)
		}
	}
	return out, true
}

// scanString scans the JSON string starting at the quote b[start] and
// returns the offset after its closing quote, and the offset and kind of
// the first escape Postgres refuses in it (offset -1 when none).
func scanString(b []byte, start int) (end, off int, what string) {
	i := start + 1
	for i < len(b) {
		switch b[i] {
		case '"':
			return i + 1, -1, ""
		case '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				r, ok := hex4(b, i+2)
				switch {
				case !ok:
					return len(b), i, `a malformed \u escape`
				case r == 0:
					return len(b), i, `a \u0000 escape`
				case r >= 0xDC00 && r <= 0xDFFF:
					return len(b), i, "an unpaired surrogate escape"
				case r >= 0xD800 && r <= 0xDBFF:
					lo, ok := rune(0), false
					if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						lo, ok = hex4(b, i+8)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return len(b), i, "an unpaired surrogate escape"
					}
					i += 12
				default:
					i += 6
				}
				continue
			}
			i += 2
		default:
			i++
		}
	}
	return len(b), -1, "" // unterminated: not valid JSON, which the caller checks
}

// hex4 reads the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(n), err == nil
}

// scanNumber scans the JSON number starting at b[start] and returns the
// offset after it and whether a Postgres numeric holds it: its exponent
// within what the parser takes, at most maxNumericFracDigits digits after
// the decimal point (the digits written after it, minus the exponent:
// trailing zeros count, as numeric keeps them) and its first non-zero digit
// at most maxNumericIntDigits places before the point.
func scanNumber(b []byte, start int) (int, bool) {
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() (int, int) { // start and end of a run of digits
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return s, i
	}
	intStart, intEnd := digits()
	fracStart, fracEnd := i, i
	if i < len(b) && b[i] == '.' {
		i++
		fracStart, fracEnd = digits()
	}
	exp := int64(0)
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		s, e := digits()
		for _, d := range b[s:e] {
			if exp = exp*10 + int64(d-'0'); exp >= maxNumericExponent {
				return i, false
			}
		}
		if neg {
			exp = -exp
		}
	}
	if fracDigits := int64(fracEnd - fracStart); fracDigits-exp > maxNumericFracDigits {
		return i, false
	}
	// The place of the first non-zero digit: 1 for the units, 2 for the
	// tens, …, 0 for the tenths, -1 for the hundredths, …
	place := int64(0)
	nonZero := false
	for k := intStart; k < intEnd; k++ {
		if b[k] != '0' {
			place, nonZero = int64(intEnd-k), true
			break
		}
	}
	if !nonZero {
		for k := fracStart; k < fracEnd; k++ {
			if b[k] != '0' {
				place, nonZero = -int64(k-fracStart), true
				break
			}
		}
	}
	if nonZero && place+exp > maxNumericIntDigits {
		return i, false
	}
	return i, true
}

// ToText returns s with every byte ValidateText refuses (a NUL, each run of
// invalid UTF-8) replaced by U+FFFD: a lossy but storable copy of text an
// agent records from elsewhere — a command's output, an error message —
// where refusing it would lose the record altogether.
func ToText(s string) string {
	if off, _ := badText(s); off < 0 {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// TextFor is ToText cut to what field holds (MaxTextLen), at a rune
// boundary, with a note of how much was cut: what a worker records of a
// handler's error or output, which must not be refused for its length.
func TextFor(field, s string) string {
	s = ToText(s)
	n := MaxTextLen(field)
	if len(s) <= n {
		return s
	}
	kept := cutRunes(s, n-len(fmt.Sprintf("\n[%d more bytes cut]", len(s)))) // room for the note's longest
	return kept + fmt.Sprintf("\n[%d more bytes cut]", len(s)-len(kept))
}

// cutRunes is s cut to at most n bytes at a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

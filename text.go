package cks

import (
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

// ValidateText reports a FieldError naming field unless s is text every
// backend stores as it is: valid UTF-8 (which excludes encoded surrogates)
// without a NUL byte. The error says where the first offending byte is.
func ValidateText(field, s string) error {
	if off, what := badText(s); off >= 0 {
		return fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedText, what, off))
	}
	return nil
}

// ValidateTexts is ValidateText of every element of ss, naming field
// (the list, as the API spells it) and the index of the first bad one.
func ValidateTexts(field string, ss []string) error {
	for i, s := range ss {
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

// ValidateJSON reports a FieldError naming field unless b, a JSON text
// (json.Valid; callers check that first, with their own message), is one
// every backend stores as it is: UTF-8 without NUL bytes, no \u0000
// escape and no unpaired surrogate escape in any string or key (Go's
// decoder would turn the latter into U+FFFD, Postgres refuses both), and
// every number within what a Postgres numeric holds.
func ValidateJSON(field string, b []byte) error {
	if off, what := badText(string(b)); off >= 0 {
		return fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONText, what, off))
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			end, off, what := scanString(b, i)
			if off >= 0 {
				return fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONText, what, off))
			}
			i = end
		case c == '-' || (c >= '0' && c <= '9'):
			end, ok := scanNumber(b, i)
			if !ok {
				return fieldError(field, fmt.Sprintf("%s (%s at byte %d)", ExpectedJSONNumber, b[i:end], i))
			}
			i = end
		default:
			i++
		}
	}
	return nil
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

package cks_test

import (
	"testing"

	"github.com/cks-dev/cks"
)

// FuzzParseTimeCursor: a cursor ParseTimeCursor reads is one String
// writes back as itself (a later page goes on from the same row), and
// anything else is a FieldError naming cursor, never a panic.
func FuzzParseTimeCursor(f *testing.F) {
	for _, s := range []string{"", "1764504000000000.s-1", "-5.x", "12", ".", "1.a.b", "99999999999999999999.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cks.ParseTimeCursor(s)
		if err != nil {
			if !cks.IsFieldError(err, "cursor") {
				t.Fatalf("ParseTimeCursor(%q) = %v, want a FieldError naming cursor", s, err)
			}
			return
		}
		if s == "" {
			return
		}
		again, err := cks.ParseTimeCursor(c.String())
		if err != nil || !again.At.Equal(c.At) || again.ID != c.ID {
			t.Fatalf("ParseTimeCursor(%q) = %+v, written %q, read back %+v %v", s, c, c.String(), again, err)
		}
	})
}

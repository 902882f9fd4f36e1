package cks_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/cks-dev/cks"
)

// FuzzParseCost: every text ParseCost accepts matches CostPattern (the
// schema's), writes back as a decimal that reads again as the same cost,
// and marshals as a JSON string that unmarshals to it; every text it
// refuses is a FieldError naming the field.
func FuzzParseCost(f *testing.F) {
	for _, s := range []string{"0", "0.0125", "12", "999999999.999999999", "1e3", "-1", "0.", ".5", "00.10", "1234567890", ""} {
		f.Add(s)
	}
	pattern := regexp.MustCompile(cks.CostPattern)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cks.ParseCost("max_cost", s)
		if err != nil {
			if !cks.IsFieldError(err, "max_cost") || pattern.MatchString(s) {
				t.Fatalf("%q: refused with %v; the pattern matches it: %v", s, err, pattern.MatchString(s))
			}
			return
		}
		if !pattern.MatchString(s) || c < 0 {
			t.Fatalf("%q: accepted as %d, but the pattern refuses it", s, c)
		}
		back, err := cks.ParseCost("cost", c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %d → %q → %d, %v", s, c, c.String(), back, err)
		}
		b, _ := json.Marshal(c)
		var u cks.Cost
		if err := json.Unmarshal(b, &u); err != nil || u != c {
			t.Fatalf("%q: JSON %s read back as %d, %v", s, b, u, err)
		}
	})
}

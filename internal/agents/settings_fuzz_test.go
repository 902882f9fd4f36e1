package agents_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/agents"
)

// FuzzParseInterval is every CKS_<AGENT>_*_INTERVAL value: seconds or a Go
// duration, surrounding blanks ignored (cks.ParseDuration, as every
// duration of cks). What it accepts is positive and is the value written (a
// number of seconds is never accepted as a value that overflowed); what it
// refuses gets an error quoting the input.
func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"30", "0.5", "30s", "1m", "0", "-1", "-5s", "1e-10", "1e10", "9e9", "1e400", "NaN", "Inf", "+Inf",
		"0x1p4", "1_000", "", " 30", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := agents.ParseInterval(v)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(v)) {
				t.Fatalf("ParseInterval(%q): error %q does not quote the input", v, err)
			}
			return
		}
		if got <= 0 {
			t.Fatalf("ParseInterval(%q) = %v, not positive", v, got)
		}
		v = strings.TrimSpace(v)
		if d, derr := time.ParseDuration(v); derr == nil {
			if got != d {
				t.Fatalf("ParseInterval(%q) = %v, want %v", v, got, d)
			}
			return
		}
		secs, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			t.Fatalf("ParseInterval(%q) = %v for neither a duration nor a number", v, got)
		}
		want := secs * float64(time.Second)
		if math.IsNaN(want) || math.IsInf(want, 0) || math.Abs(float64(got)-want) > math.Max(1, want*1e-9) {
			t.Fatalf("ParseInterval(%q) = %v (%d ns), want %g ns", v, got, int64(got), want)
		}
	})
}

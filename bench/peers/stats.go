package peers

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// percentile returns the p-quantile (0..1) of sorted by the nearest-rank
// method: the smallest value at least p of the samples are not above.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// spread is the min, median and max of xs (zeros when empty). The median of
// an even count is the mean of the middle two.
func spread(xs []float64) (lo, med, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], med, s[n-1]
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%s %ss", thousands(int64(n)), word)
}

// thousands formats n with commas: 20000 → "20,000".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// topStatements is how many statements an Accounting keeps.
const topStatements = 8

// mergeTop sums two statement lists by query and keeps the most frequent.
func mergeTop(a, b []Statement) []Statement {
	if len(b) == 0 {
		return a
	}
	at := map[string]int{} // query → index in out
	var out []Statement
	for _, l := range [][]Statement{a, b} {
		for _, s := range l {
			if i, ok := at[s.Query]; ok {
				out[i].Calls += s.Calls
				out[i].Rows += s.Rows
				out[i].TimeMS += s.TimeMS
				continue
			}
			at[s.Query] = len(out)
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(x, y Statement) int { return cmp.Compare(y.Calls, x.Calls) })
	if len(out) > topStatements {
		out = out[:topStatements]
	}
	return out
}

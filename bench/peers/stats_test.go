package peers

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of 100", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"max of 100", ms(hundred...), 1, 100 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{"p0 is the min", ms(3, 4), 0, 3 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		xs          []float64
		lo, med, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{5}, 5, 5, 5},
		{[]float64{3, 1, 2}, 1, 2, 3},
		{[]float64{4, 1, 3, 2}, 1, 2.5, 4},
	} {
		lo, med, hi := spread(tc.xs)
		if lo != tc.lo || med != tc.med || hi != tc.hi {
			t.Errorf("spread(%v) = %v, %v, %v; want %v, %v, %v", tc.xs, lo, med, hi, tc.lo, tc.med, tc.hi)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMergeTop(t *testing.T) {
	a := []Statement{{Query: "begin", Calls: 10, Rows: 0, TimeMS: 1}, {Query: "select", Calls: 4, Rows: 4}}
	b := []Statement{{Query: "select", Calls: 8, Rows: 8, TimeMS: 2}, {Query: "insert", Calls: 5, Rows: 5}}
	got := mergeTop(a, b)
	want := []Statement{{Query: "select", Calls: 12, Rows: 12, TimeMS: 2}, {Query: "begin", Calls: 10, TimeMS: 1}, {Query: "insert", Calls: 5, Rows: 5}}
	if !slices.Equal(got, want) {
		t.Errorf("mergeTop = %+v, want %+v", got, want)
	}
	var many []Statement
	for i := range topStatements + 3 {
		many = append(many, Statement{Query: string(rune('a' + i)), Calls: int64(i)})
	}
	if got := mergeTop(nil, many); len(got) != topStatements || got[0].Calls != topStatements+2 {
		t.Errorf("mergeTop kept %d statements, first %+v; want the %d most frequent", len(got), got[0], topStatements)
	}
}

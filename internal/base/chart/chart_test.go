package chart_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/base/chart"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func minute(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

func TestNiceAxis(t *testing.T) {
	for _, c := range []struct {
		max       float64
		top, step float64
	}{
		{0, 4, 1}, {-3, 4, 1}, {math.NaN(), 4, 1}, {1, 1, 0.25}, {3, 4, 1}, {4, 4, 1}, {7, 8, 2}, {9, 10, 2.5},
		{17, 20, 5}, {120000, 200000, 50000}, {0.03, 0.04, 0.01},
	} {
		a := chart.NiceAxis(c.max)
		if math.Abs(a.Max-c.top) > 1e-9 || math.Abs(a.Step-c.step) > 1e-9 {
			t.Errorf("NiceAxis(%v) = %+v, want max %v step %v", c.max, a, c.top, c.step)
		}
		if !math.IsNaN(c.max) && a.Max < c.max {
			t.Errorf("NiceAxis(%v) tops at %v, below the value", c.max, a.Max)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 3: "3", 2.5: "2.5", 0.25: "0.25", 12.4: "12", 1200: "1.2k",
		60000: "60k", 3.4e6: "3.4M", 1000: "1k", 0.004: "0.004", 0.015: "0.015", 0.0005: "0.0005", -0.02: "-0.02"} {
		if got := chart.Num(v); got != want {
			t.Errorf("Num(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestGeometry: times map onto the plot left to right and values bottom
// to top, clamped to it.
func TestGeometry(t *testing.T) {
	c := chart.Chart{Start: minute(0), End: minute(60)}
	x0, xm, x1 := c.X(minute(0)), c.X(minute(30)), c.X(minute(60))
	if !(x0 < xm && xm < x1) || math.Abs(xm-(x0+x1)/2) > 1e-9 {
		t.Errorf("x of start, middle, end = %v %v %v", x0, xm, x1)
	}
	if c.X(minute(-5)) != x0 || c.X(minute(90)) != x1 {
		t.Errorf("times outside the axis are not clamped: %v %v", c.X(minute(-5)), c.X(minute(90)))
	}
	a := chart.Axis{Max: 10, Step: 2.5}
	if y0, y10 := chart.Y(a, 0), chart.Y(a, 10); !(y10 < y0) || chart.Y(a, 5) != (y0+y10)/2 || chart.Y(a, 50) != y10 || chart.Y(a, -1) != y0 {
		t.Errorf("y of 0, 5, 10 = %v %v %v", y0, chart.Y(a, 5), y10)
	}
}

// TestXTicks: at most six labels, on whole steps, inside the axis.
func TestXTicks(t *testing.T) {
	for _, c := range []struct {
		span  time.Duration
		first time.Time
		step  time.Duration
	}{
		{59 * time.Minute, minute(0), 10 * time.Minute},
		{5 * time.Minute, minute(0), time.Minute},
		{24 * time.Hour, minute(0), 6 * time.Hour},
	} {
		ticks := chart.Chart{Start: minute(0), End: minute(0).Add(c.span)}.XTicks()
		if len(ticks) == 0 || len(ticks) > 7 || !ticks[0].Equal(c.first) {
			t.Fatalf("span %v: ticks %v", c.span, ticks)
		}
		for i := 1; i < len(ticks); i++ {
			if ticks[i].Sub(ticks[i-1]) != c.step {
				t.Errorf("span %v: ticks %v, want every %v", c.span, ticks, c.step)
			}
		}
	}
	// A start off the step: the first label is the next whole step.
	ticks := chart.Chart{Start: minute(0).Add(7 * time.Minute), End: minute(66)}.XTicks()
	if !ticks[0].Equal(minute(10)) {
		t.Errorf("ticks from 12:07: %v, want the first at 12:10", ticks)
	}
}

// TestStackedBars: a stack's layers sit on each other, the axis covers
// the tallest stack, and each bar says what it is.
func TestStackedBars(t *testing.T) {
	c := chart.Chart{ID: "done", Title: "Tasks finished", Desc: "Per minute.", Unit: "tasks", Kind: chart.StackedBars,
		Start: minute(0), End: minute(3), Step: time.Minute, Series: []chart.Series{
			{Name: "completed", Points: []chart.Point{{minute(0), 3}, {minute(2), 1}}},
			{Name: "failed", Points: []chart.Point{{minute(0), 4}, {minute(1), 0}}},
		}}
	if a := c.Axis(); a.Max != 8 {
		t.Errorf("axis %+v, want max 8 (the stack of 7)", a)
	}
	svg := parse(t, string(c.SVG()))
	var rects []*node // the bars: each says what it is in its <title>
	for _, r := range svg.all("rect") {
		if r.text != "" {
			rects = append(rects, r)
		}
	}
	if len(rects) != 3 { // a zero draws nothing
		t.Fatalf("%d bars, want 3: %s", len(rects), c.SVG())
	}
	// completed@0 below failed@0: its top is failed's bottom.
	done, failed := rects[0], rects[2]
	if d, f := num(t, done.attr("y")), num(t, failed.attr("y"))+num(t, failed.attr("height")); math.Abs(d-f) > 0.11 {
		t.Errorf("failed's bar ends at %v, completed's starts at %v", f, d)
	}
	if done.attr("x") != failed.attr("x") || num(t, failed.attr("height")) <= num(t, done.attr("height")) {
		t.Errorf("stack misdrawn: %+v %+v", done, failed)
	}
	if got := done.text; got != "completed 2026-11-30 12:00 UTC: 3 tasks" {
		t.Errorf("bar title %q", got)
	}
	if got := svg.first("title").text; got != "Tasks finished" {
		t.Errorf("<title> %q", got)
	}
	if got := svg.first("desc").text; got != "Per minute. completed: 4 tasks in all, at most 3 in one slot. failed: 4 tasks in all, at most 4 in one slot." {
		t.Errorf("<desc> %q", got)
	}
	if got := svg.attr("aria-labelledby"); got != "done-title done-desc" {
		t.Errorf("aria-labelledby %q", got)
	}
	labels := strings.Join(svg.texts("text"), "|")
	if !strings.Contains(labels, "tasks|0|2|4|6|8|") || !strings.Contains(labels, "12:00|12:01|12:02|12:03") {
		t.Errorf("axis labels %q", labels)
	}
}

// TestLines: a line per series through its points, broken at a gap, a
// dot per point; text is escaped.
func TestLines(t *testing.T) {
	c := chart.Chart{ID: "lat", Title: "Claim <latency>", Unit: "ms", Gap: 2 * time.Minute,
		Start: minute(0), End: minute(10), Series: []chart.Series{
			{Name: "p50 & more", Points: []chart.Point{{minute(0), 10}, {minute(1), 20}, {minute(5), 30}, {minute(6), 40}}},
		}}
	out := string(c.SVG())
	if strings.Contains(out, "<latency>") || !strings.Contains(out, "Claim &lt;latency&gt;") || strings.Contains(out, "p50 & more") {
		t.Errorf("unescaped text in %s", out)
	}
	svg := parse(t, out)
	if lines := svg.all("polyline"); len(lines) != 2 {
		t.Errorf("%d polylines, want 2 (broken at the 4-minute gap)", len(lines))
	}
	if dots := svg.all("circle"); len(dots) != 4 {
		t.Errorf("%d dots, want 4", len(dots))
	}
	if fig := string(c.Figure()); !strings.Contains(fig, "<figcaption>Claim &lt;latency&gt;</figcaption>") ||
		!strings.Contains(fig, `</svg>p50 &amp; more</li>`) {
		t.Errorf("figure %s", fig)
	}
}

// TestSeriesStyles: the twelve series of a chart have twelve colours and,
// besides, marks: lines four dashes and dot shapes, bars a plain fill and
// three patterns defined in the chart; each legend key shows its series'
// colour and mark.
func TestSeriesStyles(t *testing.T) {
	var series []chart.Series
	for i := range chart.Colors {
		series = append(series, chart.Series{Name: fmt.Sprintf("s%d", i), Points: []chart.Point{{minute(0), 1}, {minute(1), 2}}})
	}
	lines := chart.Chart{ID: "l", Start: minute(0), End: minute(2), Series: series}
	fig := string(lines.Figure())
	colors := map[string]bool{}
	for i := range chart.Colors {
		key := regexp.MustCompile(fmt.Sprintf(`<li data-series="%d"><svg class="chart-legend__key"[^>]*><line class="chart-legend__color chart__line (chart__s\d+) (chart__m\d)"`, i)).FindStringSubmatch(fig)
		if key == nil {
			t.Fatalf("series %d has no legend key with its colour and mark: %s", i, fig)
		}
		if colors[key[1]] {
			t.Errorf("series %d shares colour %s", i, key[1])
		}
		colors[key[1]] = true
		if want := fmt.Sprintf("chart__m%d", i%chart.Marks); key[2] != want {
			t.Errorf("series %d's mark %s, want %s", i, key[2], want)
		}
	}
	svg := parse(t, string(lines.SVG()))
	if n := len(svg.all("circle")) + len(svg.all("rect")) + len(svg.all("path")); n != 2*chart.Colors {
		t.Errorf("%d dots, want %d", n, 2*chart.Colors)
	}
	bars := chart.Chart{ID: "b", Kind: chart.StackedBars, Step: time.Minute, Start: minute(0), End: minute(2), Series: series[:chart.Marks]}
	fig = string(bars.Figure())
	for i := 1; i < chart.Marks; i++ {
		if !strings.Contains(fig, fmt.Sprintf(`<pattern id="b-fill-%d"`, i)) || strings.Count(fig, fmt.Sprintf(`fill="url(#b-fill-%d)"`, i)) != 3 {
			t.Errorf("series %d's bars and legend key are not filled with its pattern: %s", i, fig)
		}
	}
	if strings.Contains(fig, `id="b-fill-0"`) {
		t.Error("series 0, a plain fill, has a pattern")
	}
}

func TestEmpty(t *testing.T) {
	c := chart.Chart{ID: "e", Title: "Nothing", Unit: "ms", Start: minute(0), End: minute(60), Series: []chart.Series{{Name: "a"}}}
	svg := parse(t, string(c.SVG()))
	if !strings.Contains(strings.Join(svg.texts("text"), "|"), "no data in this window") {
		t.Errorf("an empty chart does not say so: %s", c.SVG())
	}
	if got := svg.first("desc").text; got != "a: no data." {
		t.Errorf("<desc> %q", got)
	}
}

// node is a parsed SVG element: the SVG must be well-formed XML.
type node struct {
	name  string
	attrs map[string]string
	text  string // of its <title> child for shapes, its own otherwise
	kids  []*node
}

func (n *node) attr(k string) string { return n.attrs[k] }

func (n *node) all(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
		out = append(out, k.all(name)...)
	}
	return out
}

func (n *node) first(name string) *node {
	if all := n.all(name); len(all) > 0 {
		return all[0]
	}
	return &node{}
}

func (n *node) texts(name string) []string {
	var out []string
	for _, k := range n.all(name) {
		out = append(out, k.text)
	}
	return out
}

func parse(t *testing.T, s string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	root := &node{}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, s)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top := stack[len(stack)-1]
			top.text += string(tk)
			if top.name == "title" && len(stack) > 2 && stack[len(stack)-2].name != "svg" {
				stack[len(stack)-2].text += string(tk)
			}
		}
	}
	if len(root.kids) != 1 || root.kids[0].name != "svg" {
		t.Fatalf("not one <svg>: %s", s)
	}
	return root.kids[0]
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

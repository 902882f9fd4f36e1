// Package chart draws the studio's time-series charts as SVG on the
// server: no script and no front-end build, so a chart is readable as soon
// as the page (or a refreshed fragment) arrives. A Chart is lines or
// stacked bars over a time axis, with a title, a description (the SVG's
// <title> and <desc>, what a screen reader says), axis labels with their
// unit, and a legend (Figure). The SVG scales to its container's width (viewBox);
// colours come from the page's stylesheet (classes chart__s0…), so dark
// mode and the Content-Security-Policy (no inline style) both hold. Every
// series of a chart has a colour of its own (up to Colors series) and a
// mark besides (Marks: a line's dash and dot shape, a bar's fill pattern),
// which its legend key shows too, so colour is never the only cue.
package chart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is how a chart draws its series.
type Kind int

// The kinds.
const (
	// Lines draws each series as a line through its points (a gap where
	// consecutive points are more than Gap apart), with a dot at each.
	Lines Kind = iota
	// StackedBars draws one bar per Step slot, the series stacked.
	StackedBars
)

// Point is one value at one time.
type Point struct {
	T time.Time
	V float64
}

// Series is one named line or bar layer.
type Series struct {
	Name   string
	Points []Point
}

// Chart is one chart.
type Chart struct {
	// ID prefixes the ids of the SVG's <title> and <desc> (unique in the page).
	ID string
	// Title and Desc are the chart's heading and its description; Desc is
	// followed in <desc> by a summary of each series (Summary).
	Title, Desc string
	// Unit names the values (the y axis): "tasks", "ms".
	Unit string
	// Start and End are the time axis.
	Start, End time.Time
	// Step is a bar's slot (StackedBars).
	Step time.Duration
	// Gap breaks a line between points further apart (Lines; 0: never).
	Gap  time.Duration
	Kind Kind
	// Series are drawn in order (the first at the bottom of a stack).
	Series []Series
}

// Colors is how many colours the stylesheet has for series (chart__s0 to
// chart__s11), Marks how many marks (chart__m0 to chart__m3): series i
// has colour i mod Colors and mark i mod Marks, so no two of a chart's
// first Colors series share a colour, and two that do differ in mark.
const (
	Colors = 12
	Marks  = 4
)

// style is the classes of series i: its colour and its mark.
func style(i int) (color, mark int) { return i % Colors, i % Marks }

// The drawing's size in viewBox units and its margins (axis labels on
// the left and below, the unit above).
const (
	Width, Height            = 400, 200
	left, right, top, bottom = 44, 10, 20, 24
	plotW, plotH             = Width - left - right, Height - top - bottom
	yTicks                   = 4
)

// Axis is a y axis from 0 to Max in Ticks steps of Step.
type Axis struct {
	Max, Step float64
}

// NiceAxis is the y axis for values up to max: the smallest 1, 2, 2.5 or
// 5 times a power of ten that, times yTicks, reaches max (1 per tick for
// an empty or all-zero chart).
func NiceAxis(max float64) Axis {
	if !(max > 0) || math.IsInf(max, 0) {
		return Axis{Max: yTicks, Step: 1}
	}
	raw := max / yTicks
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step := m * mag; step*yTicks >= max*(1-1e-9) {
			return Axis{Max: step * yTicks, Step: step}
		}
	}
	return Axis{Max: 10 * mag * yTicks, Step: 10 * mag}
}

// X is the horizontal position of t (clamped to the plot).
func (c Chart) X(t time.Time) float64 {
	span := c.End.Sub(c.Start)
	if span <= 0 {
		return left
	}
	f := float64(t.Sub(c.Start)) / float64(span)
	return left + math.Min(math.Max(f, 0), 1)*plotW
}

// Y is the vertical position of v on axis a (0 at the bottom of the plot).
func Y(a Axis, v float64) float64 {
	return top + plotH - math.Min(math.Max(v/a.Max, 0), 1)*plotH
}

// Axis is the chart's y axis: for stacked bars the tallest stack, else
// the largest value.
func (c Chart) Axis() Axis {
	var top float64
	if c.Kind == StackedBars {
		sums := map[int64]float64{}
		for _, s := range c.Series {
			for _, p := range s.Points {
				sums[c.slot(p.T)] += math.Max(p.V, 0)
			}
		}
		for _, v := range sums {
			top = math.Max(top, v)
		}
	} else {
		for _, s := range c.Series {
			for _, p := range s.Points {
				top = math.Max(top, p.V)
			}
		}
	}
	return NiceAxis(top)
}

// slot is the index of t's Step slot from Start.
func (c Chart) slot(t time.Time) int64 {
	if c.Step <= 0 {
		return 0
	}
	return int64(t.Sub(c.Start) / c.Step)
}

// Summary says in words what a series holds: its total (bars) or its
// range and latest value (lines).
func (c Chart) Summary(s Series) string {
	if len(s.Points) == 0 {
		return s.Name + ": no data."
	}
	var sum, hi float64
	lo := math.Inf(1)
	for _, p := range s.Points {
		sum += p.V
		hi, lo = math.Max(hi, p.V), math.Min(lo, p.V)
	}
	if c.Kind == StackedBars {
		return fmt.Sprintf("%s: %s %s in all, at most %s in one slot.", s.Name, Num(sum), c.Unit, Num(hi))
	}
	last := s.Points[len(s.Points)-1].V
	return fmt.Sprintf("%s: from %s to %s %s, latest %s.", s.Name, Num(lo), Num(hi), c.Unit, Num(last))
}

// Num formats a value briefly: 3, 2.5, 0.25, 0.004, 1.2k, 60k, 3.4M. A
// value under 1 keeps two significant digits, so small amounts (a cost of
// a fraction of a cent) do not all read 0.
func Num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trim(v/1e6, 1) + "M"
	case a >= 1e3:
		return trim(v/1e3, 1) + "k"
	case a >= 10 || a == math.Trunc(a):
		return trim(v, 0)
	case a >= 1:
		return trim(v, 1)
	default:
		return trim(v, max(2, int(-math.Floor(math.Log10(a)))+1))
	}
}

func trim(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// XTicks are the times labelled on the x axis: whole multiples of a step
// of 1, 5, 10, 15, 30 or 60 minutes (or hours beyond) that gives at most
// six labels.
func (c Chart) XTicks() []time.Time {
	span := c.End.Sub(c.Start)
	if span <= 0 {
		return nil
	}
	step := time.Minute
	for _, s := range []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		step = s
		if span/s <= 6 {
			break
		}
	}
	var out []time.Time
	for t := c.Start.Truncate(step); !t.After(c.End); t = t.Add(step) {
		if !t.Before(c.Start) {
			out = append(out, t)
		}
	}
	return out
}

// SVG renders the chart.
func (c Chart) SVG() template.HTML {
	var b strings.Builder
	a := c.Axis()
	id := html.EscapeString(c.ID)
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" data-chart="%s">`,
		Width, Height, id, id, id)
	desc := c.Desc
	for _, s := range c.Series {
		desc += " " + c.Summary(s)
	}
	fmt.Fprintf(&b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, id, esc(c.Title), id, esc(strings.TrimSpace(desc)))
	if c.Kind == StackedBars {
		c.patterns(&b)
	}
	// The y axis: grid lines and their values, the unit above them.
	fmt.Fprintf(&b, `<text class="chart__unit" x="%d" y="%d">%s</text>`, 2, top-8, esc(c.Unit))
	for i := 0; i <= yTicks; i++ {
		v := a.Step * float64(i)
		y := Y(a, v)
		fmt.Fprintf(&b, `<line class="chart__grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, left, f(y), Width-right, f(y))
		fmt.Fprintf(&b, `<text class="chart__label" x="%d" y="%s" text-anchor="end">%s</text>`, left-4, f(y+4), Num(v))
	}
	// The x axis: its times, in UTC here; the page script shows them in
	// the browser's time zone (data-t, data-t-format).
	ticks := c.XTicks()
	layout, format := "15:04", "hm"
	if len(ticks) > 1 && ticks[1].Sub(ticks[0]) >= 24*time.Hour {
		layout, format = "01-02", "md"
	}
	for _, t := range ticks {
		x, anchor := c.X(t), "middle"
		if x > Width-right-15 { // a label at the right edge would be cut in half
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="chart__label" x="%s" y="%d" text-anchor="%s" data-t="%s" data-t-format="%s">%s</text>`,
			f(x), Height-6, anchor, t.UTC().Format(time.RFC3339), format, t.UTC().Format(layout))
	}
	empty := true
	for _, s := range c.Series {
		empty = empty && len(s.Points) == 0
	}
	switch {
	case empty:
		fmt.Fprintf(&b, `<text class="chart__empty" x="%d" y="%d" text-anchor="middle">no data in this window</text>`,
			left+plotW/2, top+plotH/2)
	case c.Kind == StackedBars:
		c.bars(&b, a)
	default:
		c.lines(&b, a)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // every text above is escaped
}

// bars draws one stacked bar per slot with a value, each layer a <rect>
// whose <title> says its series, time and value.
func (c Chart) bars(b *strings.Builder, a Axis) {
	slots := 1.0
	if c.Step > 0 {
		slots = math.Max(float64(c.End.Sub(c.Start))/float64(c.Step), 1)
	}
	w := math.Max(plotW/slots-1, 1)
	base := map[int64]float64{}
	for i, s := range c.Series {
		for _, p := range s.Points {
			if p.V <= 0 {
				continue
			}
			k := c.slot(p.T)
			x := c.X(c.Start.Add(time.Duration(k) * c.Step))
			y0, y1 := Y(a, base[k]), Y(a, base[k]+p.V)
			base[k] += p.V
			fmt.Fprintf(b, `<rect %s x="%s" y="%s" width="%s" height="%s"><title>%s %s: %s %s</title></rect>`,
				c.barFill(i), f(x+0.5), f(y1), f(w), f(y0-y1), esc(s.Name), p.T.UTC().Format("2006-01-02 15:04 UTC"), Num(p.V), esc(c.Unit))
		}
	}
}

// lines draws each series as polylines (broken at gaps) with a dot per point.
func (c Chart) lines(b *strings.Builder, a Axis) {
	for i, s := range c.Series {
		color, mark := style(i)
		var run []string
		flush := func() {
			if len(run) > 1 {
				fmt.Fprintf(b, `<polyline class="chart__line chart__s%d chart__m%d" points="%s"/>`, color, mark, strings.Join(run, " "))
			}
			run = run[:0]
		}
		for j, p := range s.Points {
			if j > 0 && c.Gap > 0 && p.T.Sub(s.Points[j-1].T) > c.Gap {
				flush()
			}
			run = append(run, f(c.X(p.T))+","+f(Y(a, p.V)))
		}
		flush()
		for _, p := range s.Points {
			fmt.Fprintf(b, `%s<title>%s %s: %s %s</title>%s`, dotOpen(i, c.X(p.T), Y(a, p.V), 2.5),
				esc(s.Name), p.T.UTC().Format("2006-01-02 15:04:05 UTC"), Num(p.V), esc(c.Unit), dotClose(i))
		}
	}
}

// dotOpen opens the dot of series i at (x, y), of radius r: a circle, a
// square, a triangle or a diamond, by the series' mark; dotClose closes it.
func dotOpen(i int, x, y, r float64) string {
	color, mark := style(i)
	class := fmt.Sprintf(`class="chart__dot chart__s%d"`, color)
	switch mark {
	case 1:
		return fmt.Sprintf(`<rect %s x="%s" y="%s" width="%s" height="%s">`, class, f(x-r), f(y-r), f(2*r), f(2*r))
	case 2:
		return fmt.Sprintf(`<path %s d="M%s %sL%s %sL%s %sZ">`, class, f(x), f(y-r-0.5), f(x+r+0.5), f(y+r), f(x-r-0.5), f(y+r))
	case 3:
		return fmt.Sprintf(`<path %s d="M%s %sL%s %sL%s %sL%s %sZ">`, class, f(x), f(y-r-0.5), f(x+r+0.5), f(y), f(x), f(y+r+0.5), f(x-r-0.5), f(y))
	default:
		return fmt.Sprintf(`<circle %s cx="%s" cy="%s" r="%s">`, class, f(x), f(y), f(r))
	}
}

func dotClose(i int) string {
	switch _, mark := style(i); mark {
	case 1:
		return "</rect>"
	case 2, 3:
		return "</path>"
	default:
		return "</circle>"
	}
}

// patterns defines the fill patterns of the chart's bar series whose mark
// is not a plain fill: stripes one way, the other, or crossed, in the
// series' colour over a tint of it. Their ids start with the chart's.
func (c Chart) patterns(b *strings.Builder) {
	b.WriteString("<defs>")
	for i := range c.Series {
		color, mark := style(i)
		if mark == 0 {
			continue
		}
		fmt.Fprintf(b, `<pattern id="%s" width="6" height="6" patternUnits="userSpaceOnUse"%s>`, c.patternID(i),
			map[int]string{1: ` patternTransform="rotate(45)"`, 2: ` patternTransform="rotate(-45)"`, 3: ""}[mark])
		fmt.Fprintf(b, `<rect class="chart__s%d" width="6" height="6" fill-opacity=".3"/>`, color)
		if mark == 3 {
			fmt.Fprintf(b, `<circle class="chart__s%d" cx="3" cy="3" r="1.6"/>`, color)
		} else {
			fmt.Fprintf(b, `<rect class="chart__s%d" width="2.5" height="6"/>`, color)
		}
		b.WriteString("</pattern>")
	}
	b.WriteString("</defs>")
}

func (c Chart) patternID(i int) string { return html.EscapeString(c.ID) + "-fill-" + strconv.Itoa(i) }

// barFill is the class (and fill) attributes of series i's bars: its
// colour, and its pattern unless its mark is a plain fill.
func (c Chart) barFill(i int) string {
	color, mark := style(i)
	if mark == 0 {
		return fmt.Sprintf(`class="chart__s%d"`, color)
	}
	return fmt.Sprintf(`class="chart__bar chart__s%d" fill="url(#%s)"`, color, c.patternID(i))
}

// legendKey is series i's key in the legend: a short line with its dash
// and a dot of its shape (lines), or a swatch of its fill (bars), in its
// colour (the element of class chart-legend__color carries it).
func (c Chart) legendKey(i int) string {
	color, mark := style(i)
	var b strings.Builder
	b.WriteString(`<svg class="chart-legend__key" viewBox="0 0 28 12" width="28" height="12" aria-hidden="true">`)
	if c.Kind == StackedBars {
		fmt.Fprintf(&b, `<rect %s x="1" y="1" width="26" height="10"/>`, c.barFill(i))
		fmt.Fprintf(&b, `<rect class="chart-legend__color chart__s%d" x="1" y="1" width="26" height="10" fill="none"/>`, color)
	} else {
		fmt.Fprintf(&b, `<line class="chart-legend__color chart__line chart__s%d chart__m%d" x1="1" y1="6" x2="27" y2="6"/>`, color, mark)
		b.WriteString(dotOpen(i, 14, 6, 3) + dotClose(i))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Figure is the chart in a <figure>: its title as the caption, the SVG,
// and the legend as a list (HTML, so it wraps on a narrow screen).
func (c Chart) Figure() template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart-figure" id="%s"><figcaption>%s</figcaption>`, esc(c.ID), esc(c.Title))
	b.WriteString(string(c.SVG()))
	b.WriteString(`<ul class="chart-legend">`)
	for i, s := range c.Series {
		fmt.Fprintf(&b, `<li data-series="%d">%s%s</li>`, i, c.legendKey(i), esc(s.Name))
	}
	b.WriteString(`</ul></figure>`)
	return template.HTML(b.String()) //nolint:gosec // every text is escaped
}

func esc(s string) string { return html.EscapeString(s) }

// f formats a coordinate with at most one decimal.
func f(v float64) string { return trim(v, 1) }

package peers

import (
	"bytes"
	"fmt"
	"html"
	"math"
)

// bar is one row of a horizontal bar chart: a bar to value and a whisker
// from lo to hi (none when both are zero).
type bar struct {
	label     string
	value     float64
	lo, hi    float64
	text      string // printed after the whisker
	color     string
	groupHead bool // a heading row: label only
}

// chart is a horizontal bar chart rendered as a self-contained SVG.
type chart struct {
	title  string
	axis   string // the unit under the axis
	log    bool   // logarithmic axis (values must be > 0)
	bars   []bar
	legend []legendEntry
}

type legendEntry struct{ color, text string }

const (
	chartWidth  = 960
	labelWidth  = 330
	plotWidth   = 480
	rowHeight   = 22
	chartTop    = 58
	chartBottom = 64
)

// svg renders c. The output depends only on c.
func (c chart) svg() []byte {
	lo, hi := c.scale()
	x := func(v float64) float64 {
		if c.log {
			v = math.Log10(math.Max(v, lo))
			return labelWidth + (v-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*plotWidth
		}
		return labelWidth + (v-lo)/(hi-lo)*plotWidth
	}
	height := chartTop + len(c.bars)*rowHeight + chartBottom
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", 12, esc(c.title))
	for i, l := range c.legend {
		lx := 12 + i*220
		fmt.Fprintf(&b, `<rect x="%d" y="34" width="12" height="12" fill="%s"/><text x="%d" y="45">%s</text>`+"\n", lx, l.color, lx+18, esc(l.text))
	}
	plotBottom := chartTop + len(c.bars)*rowHeight
	for _, t := range c.ticks(lo, hi) {
		tx := x(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", tx, chartTop-4, tx, plotBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555555">%s</text>`+"\n", tx, plotBottom+16, esc(tickLabel(t)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555555">%s</text>`+"\n", labelWidth+plotWidth/2, plotBottom+36, esc(c.axis))
	for i, r := range c.bars {
		y := chartTop + i*rowHeight
		if r.groupHead {
			fmt.Fprintf(&b, `<text x="12" y="%d" font-weight="bold">%s</text>`+"\n", y+15, esc(r.label))
			continue
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+15, esc(r.label))
		x0 := x(lo)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+4, math.Max(1, x(r.value)-x0), rowHeight-8, r.color)
		end := x(r.value)
		if r.lo != 0 || r.hi != 0 {
			wl, wh := x(r.lo), x(r.hi)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222222"/>`+"\n", wl, y+11, wh, y+11)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222222"/>`+"\n", wl, y+7, wl, y+15)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222222"/>`+"\n", wh, y+7, wh, y+15)
			end = math.Max(end, wh)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#333333">%s</text>`+"\n", end+6, y+15, esc(r.text))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// scale is the axis range: from 0 (linear) or the power of ten below the
// smallest value (log) to a round number above the largest.
func (c chart) scale() (lo, hi float64) {
	top, bottom := 0.0, math.Inf(1)
	for _, r := range c.bars {
		if r.groupHead {
			continue
		}
		top = math.Max(top, math.Max(r.value, r.hi))
		for _, v := range []float64{r.value, r.lo} {
			if v > 0 {
				bottom = math.Min(bottom, v)
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	if c.log {
		if math.IsInf(bottom, 1) {
			bottom = top / 10
		}
		return math.Pow(10, math.Floor(math.Log10(bottom))), math.Pow(10, math.Ceil(math.Log10(top)+1e-9))
	}
	return 0, niceCeil(top)
}

// niceCeil rounds v up to 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
// ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func (c chart) ticks(lo, hi float64) []float64 {
	var out []float64
	if c.log {
		for v := lo; v <= hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceStep(hi / 6)
	for v := lo; v <= hi*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

// niceStep rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return thousands(int64(v))
	case v >= 1:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string { return html.EscapeString(s) }

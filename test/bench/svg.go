package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// palette colors the series of a chart, OpenSSH first.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"}

// barChart is a grouped bar chart: one group per category on the x axis,
// one bar per series in each group. NaN values are left out.
type barChart struct {
	Title  string
	YLabel string
	Groups []string
	Series []string
	Values [][]float64 // [series][group]
}

// Layout constants, in SVG user units.
const (
	chartHeight = 460
	plotTop     = 50
	plotBottom  = 330 // y of the x axis
	plotLeft    = 80
	barWidth    = 16
	groupGap    = 24
	legendRow   = 18
)

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// axisMax is the top of the y axis and the tick step for data up to max.
func axisMax(max float64) (top, step float64) {
	step = niceStep(max / 5)
	top = step * math.Ceil(max/step)
	if top == 0 {
		top = step
	}
	return top, step
}

func (c *barChart) max() float64 {
	m := 0.0
	for _, s := range c.Values {
		for _, v := range s {
			if !math.IsNaN(v) && v > m {
				m = v
			}
		}
	}
	return m
}

func (c *barChart) width() int {
	g := len(c.Series)*barWidth + groupGap
	return max(640, plotLeft+40+len(c.Groups)*g+160)
}

// WriteSVG draws the chart as a standalone SVG document.
func (c *barChart) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	width := c.width()
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, chartHeight, width, chartHeight)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, chartHeight)
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, esc(c.Title))
	top, step := axisMax(c.max())
	plotRight := width - 170
	y := func(v float64) float64 { return plotBottom - v/top*(plotBottom-plotTop) }
	for t := 0.0; t <= top*1.0001; t += step {
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, plotRight, y(t), y(t))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y(t)+4, fmtTick(t))
	}
	fmt.Fprintf(bw, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		(plotTop+plotBottom)/2, esc(c.YLabel))
	gw := len(c.Series)*barWidth + groupGap
	for g, name := range c.Groups {
		x0 := plotLeft + 20 + g*gw
		for s := range c.Series {
			v := c.value(s, g)
			if math.IsNaN(v) {
				continue
			}
			x := x0 + s*barWidth
			fmt.Fprintf(bw, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				x, y(v), barWidth-2, plotBottom-y(v), palette[s%len(palette)], esc(c.Series[s]), esc(name), fmtTick(v))
		}
		cx := x0 + len(c.Series)*barWidth/2
		fmt.Fprintf(bw, `<text transform="translate(%d %d) rotate(35)" text-anchor="start">%s</text>`+"\n", cx-4, plotBottom+14, esc(name))
	}
	fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", plotLeft, plotRight, plotBottom, plotBottom)
	for s, name := range c.Series {
		ly := plotTop + s*legendRow
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", plotRight+16, ly, palette[s%len(palette)])
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", plotRight+34, ly+10, esc(name))
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

func (c *barChart) value(s, g int) float64 {
	if s >= len(c.Values) || g >= len(c.Values[s]) {
		return math.NaN()
	}
	return c.Values[s][g]
}

func esc(s string) string { return html.EscapeString(s) }

// fmtTick prints an axis value without needless digits.
func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

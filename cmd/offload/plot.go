package main

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Plot layout, in SVG user units.
const (
	plotW, plotH     = 900, 480
	plotX0, plotX1   = 80, 640 // left and right edge of the drawing area
	plotY0, plotY1   = 50, 400 // top and bottom edge
	plotLegendX      = 660
	plotLegendRowGap = 16
)

// plotColors tell algorithms apart; dash patterns tell providers apart.
var (
	plotColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
		"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}
	plotDashes = []string{"", "6 3", "2 3", "10 3 2 3"}
)

// writeSpeedPlot draws the bulk results of rep as an SVG line chart:
// throughput against block size (log scale), one line per algorithm and
// provider. Color is the algorithm, the dash pattern the provider.
func writeSpeedPlot(path string, rep *speedReport) error {
	if len(rep.Bulk) == 0 {
		return errors.New("speed: -plot: no bulk results to plot (name a bulk algorithm, or none for all)")
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("speed: -plot: %w", err)
	}
	err = drawSpeedPlot(f, rep)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("speed: -plot: %w", err)
	}
	return nil
}

// speedAxes holds the data ranges of a plot.
type speedAxes struct {
	minSize, maxSize float64 // bytes, log2 axis
	top, step        float64 // MB/s, linear axis
}

func speedRanges(rows []bulkRow) speedAxes {
	a := speedAxes{minSize: math.Inf(1), maxSize: math.Inf(-1)}
	maxY := 0.0
	for _, r := range rows {
		for i, s := range r.Sizes {
			a.minSize = math.Min(a.minSize, float64(s))
			a.maxSize = math.Max(a.maxSize, float64(s))
			if i < len(r.BytesPerSec) {
				maxY = math.Max(maxY, r.BytesPerSec[i]/1e6)
			}
		}
	}
	if a.minSize >= a.maxSize {
		a.minSize, a.maxSize = a.minSize/2, a.maxSize*2
	}
	a.step = plotStep(maxY / 6)
	a.top = a.step * math.Max(1, math.Ceil(maxY/a.step))
	return a
}

// plotStep rounds x up to 1, 2 or 5 times a power of ten.
func plotStep(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func (a speedAxes) x(size float64) float64 {
	return plotX0 + (math.Log2(size)-math.Log2(a.minSize))/(math.Log2(a.maxSize)-math.Log2(a.minSize))*(plotX1-plotX0)
}

func (a speedAxes) y(mbps float64) float64 {
	return plotY1 - mbps/a.top*(plotY1-plotY0)
}

func drawSpeedPlot(w io.Writer, rep *speedReport) error {
	bw := bufio.NewWriter(w)
	a := speedRanges(rep.Bulk)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		plotW, plotH, plotW, plotH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	title := "offload speed: throughput by block size"
	if rep.Multi > 1 {
		title += fmt.Sprintf(" (%d workers)", rep.Multi)
	}
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", plotX0, html.EscapeString(title))
	fmt.Fprintf(bw, `<text x="%d" y="40" fill="#555">%s</text>`+"\n", plotX0, html.EscapeString(plotSubtitle(rep)))
	drawSpeedAxes(bw, a, rep.Bulk)
	colors, dashes := map[string]int{}, map[string]int{}
	for i, r := range rep.Bulk {
		c := indexOf(colors, r.Algorithm)
		d := indexOf(dashes, r.Provider)
		style := fmt.Sprintf(`stroke="%s" stroke-width="2" fill="none"`, plotColors[c%len(plotColors)])
		if dash := plotDashes[d%len(plotDashes)]; dash != "" {
			style += fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		bw.WriteString(`<polyline ` + style + ` points="`)
		for j, s := range r.Sizes {
			if j < len(r.BytesPerSec) {
				fmt.Fprintf(bw, "%.1f,%.1f ", a.x(float64(s)), a.y(r.BytesPerSec[j]/1e6))
			}
		}
		fmt.Fprintf(bw, `"><title>%s</title></polyline>`+"\n", html.EscapeString(r.Algorithm+" ("+r.Provider+")"))
		ly := plotY0 + i*plotLegendRowGap
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" %s/>`+"\n", plotLegendX, plotLegendX+28, ly, ly, style)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", plotLegendX+34, ly+4, html.EscapeString(r.Algorithm+" ("+r.Provider+")"))
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// plotSubtitle names the machine the figures come from.
func plotSubtitle(rep *speedReport) string {
	lines := rep.Build.lines()
	if len(lines) > 1 {
		lines = lines[1:] // the version line says least about the machine
	}
	s := strings.Join(lines, "; ")
	if len(s) > 140 {
		s = s[:140] + "..."
	}
	return s
}

// drawSpeedAxes draws the grid, the tick labels and the axis titles.
func drawSpeedAxes(bw *bufio.Writer, a speedAxes, rows []bulkRow) {
	for t := 0.0; t <= a.top*1.0001; t += a.step {
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotX0, plotX1, a.y(t), a.y(t))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotX0-6, a.y(t)+4, strconv.FormatFloat(t, 'f', -1, 64))
	}
	seen := map[int]bool{}
	for _, r := range rows {
		for _, s := range r.Sizes {
			if seen[s] {
				continue
			}
			seen[s] = true
			x := a.x(float64(s))
			fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>`+"\n", x, x, plotY0, plotY1)
			fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, plotY1+16, sizeLabel(s))
		}
	}
	fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", plotX0, plotX1, plotY1, plotY1)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">block size (bytes, log scale)</text>`+"\n", (plotX0+plotX1)/2, plotY1+40)
	fmt.Fprintf(bw, `<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">MB/s (10^6 bytes per second)</text>`+"\n", (plotY0+plotY1)/2)
}

// sizeLabel prints 16, 1K, 32K.
func sizeLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}

// indexOf numbers keys in order of first appearance.
func indexOf(m map[string]int, k string) int {
	if i, ok := m[k]; ok {
		return i
	}
	m[k] = len(m)
	return m[k]
}

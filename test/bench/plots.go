package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// plot is one chart file the report produces.
type plot struct {
	File  string
	Chart *barChart
}

// buildPlots makes the report's charts; charts without data are left out.
func buildPlots(r *Report) []plot {
	servers := r.serverNames()
	mb := func(c *Case) float64 { return c.MBPerSec }
	var out []plot
	add := func(file, title, ylabel string, keys []caseKey, v func(*Case) float64) {
		if len(keys) == 0 {
			return
		}
		out = append(out, plot{file, chartOf(r, title, ylabel, keys, servers, v)})
	}
	add("pipe.svg", "Pipe throughput through ssh, by cipher", "MB/s (higher is better)",
		r.keys(kindPipeUp, kindPipeDown), mb)
	add("files.svg", "sftp and scp throughput, "+r.Settings.XferCipher, "MB/s (higher is better)",
		r.keys(kindSFTPGet, kindSFTPPut, kindSCPUp, kindSCPDown, kindSCPOUp, kindSCPODown), mb)
	add("cpu.svg", "Server CPU seconds per GiB moved", "CPU s/GiB (lower is better)",
		r.keys(transferKinds...), func(c *Case) float64 { return c.CPUPerGiB })
	add("latency.svg", "ssh host true", "milliseconds (lower is better)",
		r.keys(kindLatency), func(c *Case) float64 { return c.Millis })
	add("handshakes.svg", "Handshakes per second by concurrent clients", "handshakes/s (higher is better)",
		r.keys(kindHandshake), func(c *Case) float64 { return c.PerSec })
	return out
}

// chartOf builds a grouped bar chart: a group per benchmark key, a bar per
// server.
func chartOf(r *Report, title, ylabel string, keys []caseKey, servers []string, v func(*Case) float64) *barChart {
	c := &barChart{Title: title, YLabel: ylabel, Series: servers}
	for _, k := range keys {
		c.Groups = append(c.Groups, shortLabel(k))
	}
	c.Values = make([][]float64, len(servers))
	for s, name := range servers {
		c.Values[s] = make([]float64, len(keys))
		for g, k := range keys {
			c.Values[s][g] = caseValue(r.find(name, k), v)
		}
	}
	return c
}

// shortLabel is keyLabel without the @openssh.com suffixes.
func shortLabel(k caseKey) string {
	if k.Clients > 0 {
		return fmt.Sprintf("%d clients", k.Clients)
	}
	return strings.ReplaceAll(keyLabel(k), "@openssh.com", "")
}

// writePlots writes every chart into dir as SVG and, when rsvg-convert or
// ImageMagick is installed, as PNG too. It returns the files written.
func writePlots(dir string, r *Report) ([]string, error) {
	var files []string
	for _, p := range buildPlots(r) {
		path := filepath.Join(dir, p.File)
		f, err := os.Create(path)
		if err != nil {
			return files, fmt.Errorf("bench: %w", err)
		}
		err = p.Chart.WriteSVG(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("bench: %s: %w", path, err)
		}
		files = append(files, path)
		if png, ok := toPNG(path); ok {
			files = append(files, png)
		}
	}
	return files, nil
}

// pngConverters are the optional SVG to PNG converters, in order.
var pngConverters = []func(svg, png string) []string{
	func(svg, png string) []string { return []string{"rsvg-convert", "-o", png, svg} },
	func(svg, png string) []string { return []string{"convert", svg, png} },
}

// toPNG converts an SVG with whichever converter is installed; it is
// optional, so failure only means no PNG.
func toPNG(svg string) (string, bool) {
	png := strings.TrimSuffix(svg, ".svg") + ".png"
	for _, mk := range pngConverters {
		conv := mk(svg, png)
		if _, err := exec.LookPath(conv[0]); err != nil {
			continue
		}
		if exec.Command(conv[0], conv[1:]...).Run() == nil {
			return png, true
		}
	}
	return "", false
}
